// Package deadbolt starts a deadbolt node in-process: the embedded single
// node behind the deadbolt command, and a test double for Go tests (see
// RunT).
package deadbolt

import (
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/server"
)

// Config configures a node. The zero value serves 127.0.0.1:6379 from
// memory.
type Config struct {
	Addr         string // RESP address; "127.0.0.1:0" picks a free port
	RequirePass  string
	MaxClients   int
	MaxBulkLen   int64
	ScriptBudget int64 // work units one Lua script may use; 0 for the default
	Logger       *slog.Logger
	Version      string
	// Clock is where time comes from; nil means the wall clock. Tests use
	// a *cluster.ManualClock (RunT does) to make TTLs run out at once.
	Clock cluster.Clock
}

// Node is a running deadbolt node.
type Node struct {
	srv   *server.Server
	local *cluster.Local
	fsm   *fsm.FSM
	clock *cluster.ManualClock
	done  chan error
}

// Start starts a single in-memory node and returns once it listens.
func Start(cfg Config) (*Node, error) {
	f := fsm.New(fsm.Options{ScriptBudget: cfg.ScriptBudget})
	hub := server.NewHub()
	local := cluster.NewLocal(f, cfg.Clock, hub)
	srv := server.New(server.Config{
		Addr:        cfg.Addr,
		RequirePass: cfg.RequirePass,
		MaxClients:  cfg.MaxClients,
		MaxBulkLen:  cfg.MaxBulkLen,
		Logger:      cfg.Logger,
		Version:     cfg.Version,
	}, local, hub)
	if err := srv.Listen(); err != nil {
		local.Close()
		f.Close()
		return nil, err
	}
	n := &Node{srv: srv, local: local, fsm: f, done: make(chan error, 1)}
	if mc, ok := cfg.Clock.(*cluster.ManualClock); ok {
		n.clock = mc
	}
	go func() { n.done <- srv.Serve() }()
	return n, nil
}

// Addr is the node's RESP address, "host:port".
func (n *Node) Addr() string { return n.srv.Addr().String() }

// Port is the node's RESP port.
func (n *Node) Port() int { return n.srv.Addr().(*net.TCPAddr).Port }

// Close stops the node.
func (n *Node) Close() error {
	err := n.srv.Close()
	err = errors.Join(err, <-n.done)
	n.local.Close()
	n.fsm.Close()
	return err
}

// Advance moves the node's clock forward, so that keys whose TTL runs out
// within d expire now, and runs active expiry. It needs a node started by
// RunT or with a *cluster.ManualClock.
func (n *Node) Advance(d time.Duration) {
	if n.clock == nil {
		panic("deadbolt: Advance needs a node with a ManualClock")
	}
	n.clock.Advance(d)
	n.local.Expire()
}

// RunT starts an in-memory node on 127.0.0.1 with a free port, for one
// test, and stops it when the test ends. Time is real time, and Advance
// moves it forward.
func RunT(tb testing.TB, opts ...func(*Config)) *Node {
	tb.Helper()
	cfg := Config{Addr: "127.0.0.1:0", Clock: &cluster.ManualClock{}}
	for _, o := range opts {
		o(&cfg)
	}
	n, err := Start(cfg)
	if err != nil {
		tb.Fatalf("deadbolt: start: %v", err)
	}
	tb.Cleanup(func() {
		if err := n.Close(); err != nil {
			tb.Errorf("deadbolt: close: %v", err)
		}
	})
	return n
}
