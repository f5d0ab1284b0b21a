package family

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Script is a Lua script sent the way Redisson 3.46+ sends one: EVALSHA
// first and, on an error starting NOSCRIPT, SCRIPT LOAD and EVALSHA again.
type Script struct {
	Src string
	SHA string // lowercase hex SHA-1 of Src
}

// NewScript returns the script for src.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{Src: src, SHA: hex.EncodeToString(sum[:])}
}

// Run evaluates the script with EVALSHA, loading it on NOSCRIPT.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	cmd := c.EvalSha(ctx, s.SHA, keys, args...)
	if err := cmd.Err(); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
		return cmd
	}
	sha, err := c.ScriptLoad(ctx, s.Src).Result()
	if err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(fmt.Errorf("SCRIPT LOAD: %w", err))
		return cmd
	}
	if sha != s.SHA {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(fmt.Errorf("SCRIPT LOAD answered sha %s, want %s", sha, s.SHA))
		return cmd
	}
	return c.EvalSha(ctx, s.SHA, keys, args...)
}

// Eval evaluates the script with plain EVAL, as Redisson 3.18 does.
func (s *Script) Eval(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return c.Eval(ctx, s.Src, keys, args...)
}

//go:embed lua/*.lua
var luaFS embed.FS

// load returns lua/<name>.lua without its first line, a comment that
// says what the script does and what KEYS and ARGV hold.
func load(name string) *Script {
	b, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	first, body, ok := strings.Cut(string(b), "\n")
	if !ok || !strings.HasPrefix(first, "-- ") {
		panic("lua/" + name + ".lua: the first line should be a comment")
	}
	return NewScript(body)
}

// Seed returns one of the scripts the runner's rlock suite takes from
// the seed articles (lua/seed_<name>.lua).
func Seed(name string) *Script { return load("seed_" + name) }
