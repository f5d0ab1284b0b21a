package luaexec

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/resp"
)

func TestSlowCorpus(t *testing.T) {
	files, _ := filepath.Glob("/root/.cache/go-build/fuzz/github.com/deadbolt/deadbolt/luaexec/FuzzReplyConversion/*")
	e := New(Options{Budget: 1_000_000, MaxStringBytes: 1 << 16})
	defer e.Close()
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(string(data), "\n")
		if len(lines) < 3 {
			continue
		}
		s := strings.TrimSuffix(strings.TrimPrefix(lines[2], "string("), ")")
		c, err := strconv.Unquote(s)
		if err != nil {
			continue
		}
		start := time.Now()
		e.Run("", []byte("return "+c), nil, nil, fixedCaller{resp.OK})
		if d := time.Since(start); d > 50*time.Millisecond {
			fmt.Printf("%v %q\n", d, c)
		}
	}
}
