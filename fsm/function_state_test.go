package fsm

import (
	"bytes"
	"fmt"
	"testing"
)

// statefulLibrary keeps state between calls in every way a library can:
// a library-level local a function assigns, a table held in one that a
// function fills, a closure made at load whose own local a function
// changes, a table a function hands to table.insert, and an iterator
// string.gmatch made at load (its position is Go's); peek only reads the
// local count assigns.
const statefulLibrary = `#!lua name=st
local n = 0
local seen = {}
local function counter()
  local c = 0
  return function() c = c + 1; return c end
end
local nextID = counter()
local log = {}
redis.register_function('count', function(keys)
  n = n + 1
  redis.call('set', keys[1], n)
  return n
end)
redis.register_function('seen', function(keys, args)
  if seen[args[1]] then return 'dup' end
  seen[args[1]] = true
  return 'new'
end)
redis.register_function('nextid', function(keys)
  local id = nextID()
  redis.call('rpush', keys[1], id)
  return id
end)
redis.register_function('peek', function() return n end)
redis.register_function('logged', function(keys, args)
  table.insert(log, args[1])
  return #log
end)
local digits = ('1 2 3 4 5 6 7 8 9 10 11 12'):gmatch('%d+')
redis.register_function('digit', function(keys)
  local d = digits()
  redis.call('rpush', keys[1], d)
  return d
end)
`

// TestFunctionStateSameAfterRestart applies one log to two state machines,
// the second restarting from its own snapshot half way, as a node that
// restarts (or a node that joins and installs a snapshot) does: every
// reply, every effect and the final snapshots must be the same. Before
// libraries that keep state got a fresh state per call, the restarted
// node's counter started again from 0 and its replies and keys differed.
func TestFunctionStateSameAfterRestart(t *testing.T) {
	var log []Command
	log = append(log, Command{Args: [][]byte{[]byte("FUNCTION"), []byte("LOAD"), []byte(statefulLibrary)}})
	for i := 0; i < 6; i++ {
		log = append(log,
			args("FCALL count 1 counter"),
			args(fmt.Sprintf("FCALL seen 0 k%d", i%2)),
			args("FCALL nextid 1 ids"),
			args("FCALL logged 0 x"),
			args("FCALL peek 0"),
			args("FCALL digit 1 digits"),
			args("GET counter"),
			args("LRANGE ids 0 -1"),
			args("LRANGE digits 0 -1"),
		)
	}
	a, b := New(Options{}), New(Options{})
	defer func() { a.Close(); b.Close() }()
	for i, cmd := range log {
		if i == len(log)/2 {
			snap := snapshotBytes(t, b)
			c := New(Options{})
			if err := c.Restore(bytes.NewReader(snap)); err != nil {
				t.Fatal(err)
			}
			b.Close()
			b = c
		}
		at := int64(1000 + i)
		ra, rb := a.Apply(at, cmd), b.Apply(at, cmd)
		if !ra.Reply.Equal(rb.Reply) || fmt.Sprint(ra.Effects) != fmt.Sprint(rb.Effects) {
			t.Fatalf("command %d %q: the node that kept its state answers %q, the restarted one %q",
				i, cmd.Args, ra.Reply.Append(nil), rb.Reply.Append(nil))
		}
	}
	if sa, sb := snapshotBytes(t, a), snapshotBytes(t, b); !bytes.Equal(sa, sb) {
		t.Fatalf("snapshots differ (%d vs %d bytes)", len(sa), len(sb))
	}
}
