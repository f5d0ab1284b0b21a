package luaexec

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/resp"
)

// A real redis-server for differential tests. It is started once, on a
// free port on 127.0.0.1, the first time a test asks for it, and stopped
// by TestMain. Tests that need it skip when redis-server is not installed.

var live struct {
	once sync.Once
	cmd  *exec.Cmd
	dir  string
	addr string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if live.cmd != nil && live.cmd.Process != nil {
		live.cmd.Process.Kill()
		live.cmd.Wait()
	}
	if live.dir != "" {
		os.RemoveAll(live.dir)
	}
	os.Exit(code)
}

func startLiveRedis() {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		live.err = err
		return
	}
	live.dir, err = os.MkdirTemp("", "luaexec-redis-")
	if err != nil {
		live.err = err
		return
	}
	for attempt := 0; attempt < 5; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			live.err = err
			return
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", live.dir, "--logfile", "")
		if err := cmd.Start(); err != nil {
			live.err = err
			return
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
			if err == nil {
				c.Close()
				live.cmd, live.addr = cmd, addr
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	live.err = fmt.Errorf("redis-server did not start")
}

// redisConn is a minimal RESP2 client.
type redisConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialLiveRedis(tb testing.TB) *redisConn {
	tb.Helper()
	live.once.Do(startLiveRedis)
	if live.err != nil {
		tb.Skipf("no redis-server: %v", live.err)
	}
	c, err := net.Dial("tcp", live.addr)
	if err != nil {
		tb.Fatalf("dial redis: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return &redisConn{c: c, r: bufio.NewReader(c)}
}

func (rc *redisConn) do(tb testing.TB, args ...[]byte) resp.Reply {
	tb.Helper()
	var out []byte
	out = append(out, fmt.Sprintf("*%d\r\n", len(args))...)
	for _, a := range args {
		out = append(out, fmt.Sprintf("$%d\r\n", len(a))...)
		out = append(out, a...)
		out = append(out, "\r\n"...)
	}
	if _, err := rc.c.Write(out); err != nil {
		tb.Fatalf("write: %v", err)
	}
	var buf []byte
	for {
		if r, n, ok := resp.Parse(buf); ok && n > 0 {
			return r
		}
		rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		chunk := make([]byte, 64*1024)
		n, err := rc.r.Read(chunk)
		if err != nil {
			tb.Fatalf("read: %v", err)
		}
		buf = append(buf, chunk[:n]...)
	}
}

func (rc *redisConn) doStr(tb testing.TB, args ...string) resp.Reply {
	tb.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return rc.do(tb, b...)
}

// forwardCaller runs a script's commands on the real server, translating
// the two errors whose text differs inside scripts.
type forwardCaller struct {
	tb testing.TB
	rc *redisConn
}

func (f forwardCaller) Call(args [][]byte) resp.Reply {
	r := f.rc.do(f.tb, args...)
	if r.Type == resp.Error {
		s := string(r.Str)
		switch {
		case strings.HasPrefix(s, "ERR unknown command"):
			return resp.Err("ERR Unknown Redis command called from script")
		case strings.HasPrefix(s, "ERR wrong number of arguments"):
			return resp.Err("ERR Wrong number of args calling Redis command from script")
		}
	}
	return r
}

// CheckCommand answers redis.acl_check_cmd the way a state machine could:
// a command is known when COMMAND INFO knows it.
func (f forwardCaller) CheckCommand(args [][]byte) (known, allowed bool) {
	r := f.rc.do(f.tb, []byte("COMMAND"), []byte("INFO"), args[0])
	known = r.Type == resp.Array && len(r.Elems) == 1 && r.Elems[0].Type == resp.Array
	return known, true
}

func replyString(r resp.Reply) string { return string(r.Append(nil)) }

func bulkString(s string) resp.Reply { return resp.BulkString(s) }
