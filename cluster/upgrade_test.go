package cluster

import (
	"strings"
	"testing"

	"github.com/deadbolt/deadbolt/fsm"
)

// With PreserveDowngrade the leader refuses what an older build could not
// apply, alone or queued in MULTI, and nothing else.
func TestRefuseNewFormat(t *testing.T) {
	n := &Node{cfg: Config{PreserveDowngrade: true}}
	refused := []fsm.Command{
		{Args: args("SET", "k", "v"), User: "locker"},
		{Args: args("__acl", "setuser", "locker", "on")},
		{Args: args("__setconfig", "hash-max-listpack-entries", "64")},
		{Tx: [][][]byte{args("SET", "k", "v"), args("__acl", "deluser", "x")}},
	}
	for _, c := range refused {
		if err := n.refuseNewFormat(c); err == nil || !strings.Contains(err.Error(), "--preserve-downgrade") {
			t.Errorf("%q %q: %v, want a refusal naming the flag", c.Args, c.Tx, err)
		}
	}
	allowed := []fsm.Command{
		{Args: args("SET", "k", "v")},
		{Args: args("__setconfig", "notify-keyspace-events", "KEA")},
		{Tx: [][][]byte{args("SET", "k", "v"), args("DEL", "k")}},
		{Args: args("__tick")},
		// function commands: written in version 1 under the old rule
		{Args: args("FCALL", "abc", "0")},
		{Args: args("FUNCTION", "LOAD", "#!lua name=x\n")},
		{Tx: [][][]byte{args("FCALL_RO", "abc", "0")}},
	}
	for _, c := range allowed {
		if err := n.refuseNewFormat(c); err != nil {
			t.Errorf("%q %q: %v", c.Args, c.Tx, err)
		}
	}
	n.cfg.PreserveDowngrade = false
	for _, c := range refused {
		if err := n.refuseNewFormat(c); err != nil {
			t.Errorf("without the flag %q: %v", c.Args, err)
		}
	}
}
