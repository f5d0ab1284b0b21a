package server

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// panicLog records whether the server logged a recovered panic.
type panicLog struct {
	mu     sync.Mutex
	panics []string
}

func (l *panicLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.Contains(string(p), "panic") {
		l.panics = append(l.panics, string(p))
	}
	return len(p), nil
}

// TestNoPanicOnAnyCommand sends every command and subcommand a client can
// name with a few argument shapes, and checks that none reaches a panic.
func TestNoPanicOnAnyCommand(t *testing.T) {
	logs := &panicLog{}
	s := newTestServer(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	ctl := dial(t, s.addr)
	skip := map[string]bool{
		"quit": true, "reset": true, "shutdown": true, "monitor": true, "debug": true,
		"client|kill": true, "client|reply": true, "client|pause": true,
		"subscribe": true, "psubscribe": true, "ssubscribe": true, // subscribed mode: other replies
	}
	tried := 0
	shapes := [][]string{{}, {"x"}, {"x", "y"}, {"1", "2", "3"}, {"-1", "0", "x", "y", "z", "", "9223372036854775808"}}
	for _, e := range ctl.do("command", "list").Elems {
		name := e.String()
		if skip[name] {
			continue
		}
		info := ctl.do("command", "info", name).Elems[0]
		blocking := false
		for _, f := range info.Elems[2].Elems {
			blocking = blocking || f.String() == "blocking"
		}
		if blocking {
			continue
		}
		argv := strings.Split(name, "|")
		c := dial(t, s.addr)
		for _, shape := range shapes {
			args := append(append([]string{}, argv...), shape...)
			if got := c.doRaw(args...); got == "-ERR internal error\r\n" {
				t.Errorf("%q: internal error", args)
			}
		}
		c.nc.Close()
		tried++
	}
	if tried < 100 {
		t.Errorf("only %d commands tried", tried)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, p := range logs.panics {
		t.Errorf("server logged: %.300s", p)
	}
}
