package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestSplitArgs(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{"addr 127.0.0.1:6379", []string{"addr", "127.0.0.1:6379"}},
		{"  requirepass\t\"a b\\n\\x41\\\"\"  ", []string{"requirepass", "a b\nA\""}},
		{`tls-protocols 'TLSv1.2 TLSv1.3'`, []string{"tls-protocols", "TLSv1.2 TLSv1.3"}},
		{`requirepass 'it\'s'`, []string{"requirepass", "it's"}},
		{`requirepass ""`, []string{"requirepass", ""}},
		{`x a"b c"`, []string{"x", "ab c"}}, // a quote inside a word opens a quoted part, as in sdssplitargs
	} {
		got, err := splitArgs(c.line)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", c.line, got, err, c.want)
		}
	}
	for _, bad := range []string{`requirepass "open`, `requirepass 'open`, `requirepass "a"b`, `requirepass 'a'b`, `x a"b`} {
		if got, err := splitArgs(bad); err == nil {
			t.Errorf("splitArgs(%q) = %q, want an error", bad, got)
		}
	}
}

// A configuration file sets the flags, an included file too, the command
// line wins over both, and CONFIG GET shows the values in force.
func TestRunConfigFile(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	os.WriteFile(filepath.Join(dir, "extra.conf"), []byte("maxclients 77\nlog-level warn\n"), 0o600)
	conf := filepath.Join(dir, "deadbolt.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf(`# deadbolt test configuration
addr %s

requirepass "se cret"
PROTO-MAX-BULK-LEN 2mb
protected-mode no
include extra.conf
notify-keyspace-events "Ex"
maxmemory 100mb
maxmemory-policy noeviction
heartbeat-timeout 700ms
`, addr)), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out, errb lockedBuffer
	go func() { done <- run(ctx, []string{"--config", conf, "--maxclients", "88"}, &out, &errb) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	dialWhenUp(t, addr).Close()
	if strings.Contains(errb.String(), "level=INFO") {
		t.Errorf("log-level warn from the included file is not in force:\n%s", errb.String())
	}
	rc := redis.NewClient(&redis.Options{Addr: addr, Password: "se cret", MaxRetries: -1})
	defer rc.Close()
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	for param, want := range map[string]string{
		"maxclients":             "88", // the command line's, not the file's 77
		"proto-max-bulk-len":     "2097152",
		"requirepass":            "se cret",
		"protected-mode":         "no",
		"loglevel":               "warning",
		"notify-keyspace-events": "xE",
		"maxmemory":              "104857600",
		"maxmemory-policy":       "noeviction",
		"port":                   addr[strings.LastIndex(addr, ":")+1:],
		// deadbolt's own parameters: the other flags.
		"heartbeat-timeout": "700ms",
		"log-format":        "text",
		"insecure-cluster":  "no",
		"config":            conf,
	} {
		got, err := rc.ConfigGet(cctx, param).Result()
		if err != nil || got[param] != want {
			t.Errorf("CONFIG GET %s = %q, %v; want %q", param, got[param], err, want)
		}
	}
	if got := rc.ConfigGet(cctx, "*-timeout").Val(); got["heartbeat-timeout"] != "700ms" || got["election-timeout"] != "500ms" || got["timeout"] != "" {
		t.Errorf("CONFIG GET *-timeout = %v", got)
	}
	if err := rc.ConfigSet(cctx, "heartbeat-timeout", "1s").Err(); err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("CONFIG SET heartbeat-timeout: %v", err)
	}
	if err := rc.ConfigRewrite(cctx).Err(); err == nil || !strings.Contains(err.Error(), "does not write its configuration file") {
		t.Errorf("CONFIG REWRITE: %v", err)
	}
	if got := rc.ConfigGet(cctx, "clock-offset-file").Val(); len(got) != 0 {
		t.Errorf("a test-only flag is a parameter: %v", got)
	}
}

// An unknown directive, a bad value or bad quoting stops the start with
// the file and the line.
func TestRunConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct {
		text, want string
	}{
		{"addr 127.0.0.1:0\n# fine\nport 6379\n", ":3: unknown directive \"port\""},
		{"protected-mode maybe\n", ":1: bad value for protected-mode"},
		{"\n\nmaxclients many\n", ":3: bad value for maxclients"},
		{"log-format xml\n", ":1: bad value for log-format"},
		{"requirepass \"open\n", ":1: unbalanced quotes"},
		{"requirepass a b\n", ":1: requirepass takes one argument, got 2"},
		{"include nosuch.conf\n", "nosuch.conf"},
		{"include self.conf\n", "nested deeper"},
		{"config other.conf\n", ":1: \"config\" is a command-line flag only"},
		{"proto-max-bulk-len 5xb\n", ":1: bad value for proto-max-bulk-len"},
	} {
		name := filepath.Join(dir, fmt.Sprintf("c%d.conf", i))
		if strings.Contains(c.text, "self.conf") {
			name = filepath.Join(dir, "self.conf")
		}
		os.WriteFile(name, []byte(c.text), 0o600)
		var out, errb lockedBuffer
		err := run(context.Background(), []string{"--config", name}, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %s and %q", c.text, err, name, c.want)
		}
	}
	var out, errb lockedBuffer
	if err := run(context.Background(), []string{"--config", filepath.Join(dir, "missing.conf")}, &out, &errb); err == nil || !strings.Contains(err.Error(), "missing.conf") {
		t.Errorf("a missing file: %v", err)
	}
}

// The process itself: a configuration file with an unknown directive
// makes it exit with status 1 and the file and line on stderr.
func TestProcessConfigFileError(t *testing.T) {
	bin := buildBinary(t)
	conf := filepath.Join(t.TempDir(), "bad.conf")
	os.WriteFile(conf, []byte("# comment\naddr 127.0.0.1:0\nappendonly yes\n"), 0o600)
	cmd := exec.Command(bin, "--config", conf)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v", err)
	}
	if want := conf + ":3: unknown directive \"appendonly\""; !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr %q lacks %q", stderr.String(), want)
	}
}

// FuzzSplitArgs: any line splits without a panic, and arguments written
// back with double quotes and escapes split to themselves.
func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{`a "b c" 'd\'e'`, `"\x41\n"`, `'open`, `"a"b`, "\t x \t", `"\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args, err := splitArgs(line)
		if err != nil {
			return
		}
		var b strings.Builder
		for i, a := range args {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteByte('"')
			for j := 0; j < len(a); j++ {
				switch c := a[j]; {
				case c == '"' || c == '\\':
					b.WriteByte('\\')
					b.WriteByte(c)
				case c < 0x20 || c >= 0x7f:
					fmt.Fprintf(&b, "\\x%02x", c)
				default:
					b.WriteByte(c)
				}
			}
			b.WriteByte('"')
		}
		again, err := splitArgs(b.String())
		if err != nil || !reflect.DeepEqual(again, args) && len(args) > 0 {
			t.Fatalf("%q: %q, written back %q: %q, %v", line, args, b.String(), again, err)
		}
	})
}
