package fsm

import (
	"bytes"
	"testing"
)

// FuzzApply runs arbitrary arguments through every command: whatever the
// input, the state machine answers with a reply (an error reply for bad
// input) and never panics, and a snapshot of the result restores.
func FuzzApply(f *testing.F) {
	f.Add(uint16(0), []byte("k\x00v\x00PX\x00100"))
	f.Add(uint16(3), []byte("k\x00-1\x00+inf\x00m"))
	f.Add(uint16(7), []byte("return redis.call('set', KEYS[1], ARGV[1])\x001\x00k\x00v"))
	f.Add(uint16(11), []byte("k\x00f\x009223372036854775807"))
	specs := Commands()
	f.Fuzz(func(t *testing.T, which uint16, raw []byte) {
		spec := specs[int(which)%len(specs)]
		if spec.Flags&Internal != 0 {
			return
		}
		args := [][]byte{[]byte(spec.Name)}
		if len(raw) > 0 {
			args = append(args, bytes.Split(raw, []byte{0})...)
		}
		fsm := New(Options{ScriptBudget: 100_000})
		defer fsm.Close()
		for _, seed := range [][]string{
			{"SET", "k", "12"}, {"HSET", "h", "f", "1"}, {"RPUSH", "l", "a", "b"},
			{"SADD", "s", "x"}, {"ZADD", "z", "1", "m"}, {"PEXPIRE", "k", "50"},
		} {
			fsm.Apply(1000, Command{Args: toArgs(seed)})
		}
		fsm.Apply(1010, Command{Args: args})
		fsm.Read(1020, Command{Args: args})
		var buf bytes.Buffer
		if err := fsm.Snapshot(&buf); err != nil {
			t.Fatal(err)
		}
		g := New(Options{})
		defer g.Close()
		if err := g.Restore(&buf); err != nil {
			t.Fatalf("restore: %v", err)
		}
	})
}

// FuzzRestore feeds arbitrary bytes to Restore: it returns an error or a
// state, never panics.
func FuzzRestore(f *testing.F) {
	good := New(Options{})
	good.Apply(1, Command{Args: toArgs([]string{"SET", "k", "v"})})
	var buf bytes.Buffer
	good.Snapshot(&buf)
	good.Close()
	f.Add(buf.Bytes())
	// Version 4: keys with lock shapes and the cluster id.
	locks := New(Options{})
	locks.Apply(1, Command{Args: toArgs([]string{"SET", "job", "t", "NX", "PX", "1000"})})
	locks.Apply(2, Command{Args: toArgs([]string{"HINCRBY", "orders", "u:1", "1"})})
	locks.Apply(3, ClusterIDCommand("0123456789abcdef0123456789abcdef"))
	buf.Reset()
	locks.Snapshot(&buf)
	locks.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("DBOLTSNP\x01"))
	f.Fuzz(func(t *testing.T, in []byte) {
		g := New(Options{})
		defer g.Close()
		_ = g.Restore(bytes.NewReader(in))
	})
}
