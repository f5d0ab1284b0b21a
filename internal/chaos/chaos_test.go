package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/redis/go-redis/v9"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/fsm"
)

const s = int64(time.Second)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Outcome
	}{
		{nil, OK},
		{redis.Nil, OK},
		{redisErr("TRYAGAIN no leader is available; try again"), Fail},
		{redisErr("ERR outcome unknown: leadership changed"), Info},
		{redisErr("ERR something new"), Info},
		{redisErr("MISCONF writes are refused: the disk of the data directory /d is full (0 bytes free); reads keep working, writes resume when space returns"), Fail},
		{redisErr("ERR Error running script: MISCONF"), Info},
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, Fail},
		{&net.OpError{Op: "read", Err: errors.New("i/o timeout")}, Info},
		{errors.New("EOF"), Info},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

func reg(f, key, arg, new string, inv, cmp int64, o Outcome) Op {
	return Op{Kind: "register", F: f, Key: key, Arg: arg, Arg2: new, Invoke: inv, Complete: cmp, Outcome: o}
}

func TestRegisterLinear(t *testing.T) {
	read := func(v string, exists bool, inv, cmp int64) Op {
		op := reg("read", "k", "", "", inv, cmp, OK)
		op.Value, op.Exists = v, exists
		return op
	}
	cas := func(old, new string, ok bool, inv, cmp int64, o Outcome) Op {
		op := reg("cas", "k", old, new, inv, cmp, o)
		op.CASOK = ok
		return op
	}
	for _, tc := range []struct {
		name string
		h    []Op
		want porcupine.CheckResult
	}{
		{"write then read", []Op{reg("write", "k", "", "1", 0, 1, OK), read("1", true, 2, 3)}, porcupine.Ok},
		{"stale read", []Op{reg("write", "k", "", "1", 0, 1, OK), reg("write", "k", "", "2", 2, 3, OK), read("1", true, 4, 5)}, porcupine.Illegal},
		{"lost write", []Op{reg("write", "k", "", "1", 0, 1, OK), read("", false, 2, 3)}, porcupine.Illegal},
		{"indeterminate write may appear late", []Op{reg("write", "k", "", "1", 0, 1, Info), read("", false, 2, 3), read("1", true, 4, 5)}, porcupine.Ok},
		{"failed write must not appear", []Op{reg("write", "k", "", "1", 0, 1, Fail), read("1", true, 2, 3)}, porcupine.Illegal},
		{"cas", []Op{reg("write", "k", "", "1", 0, 1, OK), cas("1", "2", true, 2, 3, OK), read("2", true, 4, 5)}, porcupine.Ok},
		{"cas wrongly failed", []Op{reg("write", "k", "", "1", 0, 1, OK), cas("1", "2", false, 2, 3, OK)}, porcupine.Illegal},
		{"keys apart", []Op{reg("write", "k", "", "1", 0, 1, OK), {Kind: "register", F: "read", Key: "j", Invoke: 2, Complete: 3}}, porcupine.Ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := CheckLinear(tc.h, "register", 10*time.Second); r.Result != tc.want {
				t.Errorf("got %v, want %v", r.Result, tc.want)
			}
		})
	}
}

func TestListLinear(t *testing.T) {
	app := func(v string, n int64, inv, cmp int64, o Outcome) Op {
		return Op{Kind: "list", F: "append", Key: "l", Arg: v, Len: n, Invoke: inv, Complete: cmp, Outcome: o}
	}
	read := func(inv, cmp int64, e ...string) Op {
		return Op{Kind: "list", F: "read", Key: "l", Elems: e, Invoke: inv, Complete: cmp}
	}
	for _, tc := range []struct {
		name string
		h    []Op
		want porcupine.CheckResult
	}{
		{"appends then read", []Op{app("1", 1, 0, 1, OK), app("2", 2, 2, 3, OK), read(4, 5, "1", "2")}, porcupine.Ok},
		{"reordered", []Op{app("1", 1, 0, 1, OK), app("2", 2, 2, 3, OK), read(4, 5, "2", "1")}, porcupine.Illegal},
		{"lost append", []Op{app("1", 1, 0, 1, OK), read(2, 3)}, porcupine.Illegal},
		{"wrong length", []Op{app("1", 2, 0, 1, OK)}, porcupine.Illegal},
		{"concurrent appends", []Op{app("1", 2, 0, 3, OK), app("2", 1, 0, 3, OK), read(4, 5, "2", "1")}, porcupine.Ok},
		{"indeterminate append", []Op{app("1", 0, 0, 1, Info), read(2, 3), read(4, 5, "1")}, porcupine.Ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := CheckLinear(tc.h, "list", 10*time.Second); r.Result != tc.want {
				t.Errorf("got %v, want %v", r.Result, tc.want)
			}
		})
	}
}

func sec(lock, owner string, start, end int64) Section {
	return Section{Lock: lock, Owner: owner, AcqInvoke: start - 1, Start: start, LeaseStart: start - 1, Lease: 3 * s, End: end}
}

func TestCheckMutex(t *testing.T) {
	t.Run("hand-over", func(t *testing.T) {
		v := CheckMutex([]Section{sec("a", "x", 1*s, 2*s), sec("a", "y", 2*s+1, 3*s), sec("b", "z", 1*s, 3*s)}, nil)
		if len(v) != 0 {
			t.Fatal(v)
		}
	})
	t.Run("overlap", func(t *testing.T) {
		v := CheckMutex([]Section{sec("a", "x", 1*s, 2*s), sec("a", "y", 2*s-5, 3*s)}, nil)
		if len(v) != 1 || v[0].Check != "mutual-exclusion" || v[0].Explained != "" {
			t.Fatal(v)
		}
	})
	t.Run("after the lease ran out", func(t *testing.T) {
		// x kept "working" for 10 s, but its claim ends with its lease.
		v := CheckMutex([]Section{sec("a", "x", 1*s, 11*s), sec("a", "y", 5*s, 6*s)}, nil)
		if len(v) != 0 {
			t.Fatal(v)
		}
	})
	t.Run("explained by a clock jump", func(t *testing.T) {
		v := CheckMutex([]Section{sec("a", "x", 1*s, 3*s), sec("a", "y", 2*s, 4*s)}, []ClockJump{{At: 1500 * int64(time.Millisecond), Delta: 6 * s}})
		if len(v) != 1 || v[0].Explained == "" {
			t.Fatal(v)
		}
	})
	t.Run("jump too small to explain", func(t *testing.T) {
		v := CheckMutex([]Section{sec("a", "x", 1*s, 3*s), sec("a", "y", 1100*int64(time.Millisecond), 4*s)}, []ClockJump{{At: 1050 * int64(time.Millisecond), Delta: s / 10}})
		if len(v) != 1 || v[0].Explained != "" {
			t.Fatal(v)
		}
	})
	t.Run("lost within the lease", func(t *testing.T) {
		x := sec("a", "x", 1*s, 3*s)
		x.Lost, x.LostAt = "renewal answered 0", 2*s
		if v := CheckMutex([]Section{x}, nil); len(v) != 1 || v[0].Check != "lock-lost" {
			t.Fatal(v)
		}
		x.LostAt = 5 * s // after the lease: fine
		if v := CheckMutex([]Section{x}, nil); len(v) != 0 {
			t.Fatal(v)
		}
	})
}

func TestCheckGuards(t *testing.T) {
	g := func(tok string, inv, cmp int64, o Outcome, applied bool) Guard {
		return Guard{Token: tok, Invoke: inv, Complete: cmp, Outcome: o, Applied: applied}
	}
	x := sec("a", "x", 1*s, 2*s)
	x.Guards = []Guard{g("x#0", 10, 20, OK, true), g("x#1", 30, 40, OK, true), g("x#2", 50, 60, Info, false)}
	y := sec("a", "y", 3*s, 4*s)
	y.Guards = []Guard{g("y#0", 70, 80, OK, true), g("y#1", 90, 100, OK, false)}
	secs := []Section{x, y}
	check := func(list []string, want ...string) {
		t.Helper()
		var got []string
		for _, v := range CheckGuards("a", list, secs) {
			got = append(got, v.Check)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("CheckGuards(%v) = %v, want %v", list, got, want)
		}
	}
	check([]string{"x#0", "x#1", "y#0"})
	check([]string{"x#0", "x#1", "x#2", "y#0"})
	check([]string{"x#0", "y#0"}, "guard-lost")
	check([]string{"x#0", "x#1", "y#0", "y#1"}, "guard-refused-applied")
	check([]string{"x#0", "y#0", "x#1"}, "guard-interleaved", "guard-order")
	check([]string{"x#0", "x#1", "y#0", "z#0"}, "guard-phantom")
}

func TestScanLog(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	os.WriteFile(p, []byte("level=INFO msg=ok\npanic: boom\nWARNING: DATA RACE\nlevel=INFO fine\nfatal error: concurrent map writes\n"), 0o644)
	bad, err := ScanLog(p, 10)
	if err != nil || len(bad) != 3 {
		t.Fatalf("ScanLog = %q, %v", bad, err)
	}
}

// TestReadNodeConverge writes data directories the way a node does (a
// log store, raftlog, raft-wal or raft-boltdb, with single commands and batches,
// and a file snapshot) and checks that replay agrees with the snapshot,
// and that a tampered snapshot is caught.
func TestReadNodeConverge(t *testing.T) {
	for _, kind := range []string{cluster.StoreRaftlog, cluster.StoreWAL, cluster.StoreBolt} {
		t.Run(kind, func(t *testing.T) { testReadNodeConverge(t, kind) })
	}
}

func testReadNodeConverge(t *testing.T, kind string) {
	dir := t.TempDir()
	mk := func(id string, tamper bool, snapAt uint64) NodeState {
		d := filepath.Join(dir, id)
		os.MkdirAll(d, 0o755)
		var store raft.LogStore
		if kind == cluster.StoreBolt {
			bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(d, "raft.db")})
			if err != nil {
				t.Fatal(err)
			}
			defer bolt.Close()
			store = bolt
		} else {
			if kind == cluster.StoreWAL {
				os.Mkdir(filepath.Join(d, "wal"), 0o755) // a directory raft-wal wrote
			}
			s, _, closer, err := cluster.OpenLogStore(d, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			store = s
		}
		if got := cluster.LogStoreKind(d); got != kind {
			t.Fatalf("store kind %s, want %s", got, kind)
		}
		f := fsm.New(fsm.Options{})
		defer f.Close()
		snaps, _ := raft.NewFileSnapshotStoreWithLogger(d, 2, hclog.NewNullLogger())
		for i := uint64(1); i <= 20; i++ {
			cmd := fsm.Command{Args: [][]byte{[]byte("SET"), []byte(fmt.Sprint("k", i%3)), []byte(fmt.Sprint(i))}}
			data := cluster.AppendEntry(nil, cluster.Entry{Time: int64(i) * 1000, Cmd: cmd})
			f.Apply(int64(i)*1000, cmd)
			if i%2 == 0 { // every other entry a batch of two
				cmd2 := fsm.Command{Args: [][]byte{[]byte("INCR"), []byte("n")}}
				data = cluster.AppendBatch(nil, data, cluster.AppendEntry(nil, cluster.Entry{Time: int64(i)*1000 + 1, Cmd: cmd2}))
				f.Apply(int64(i)*1000+1, cmd2)
			}
			if err := store.StoreLog(&raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: data}); err != nil {
				t.Fatal(err)
			}
			if i == snapAt {
				var b bytes.Buffer
				f.Snapshot(&b)
				if tamper {
					f.Apply(99, fsm.Command{Args: [][]byte{[]byte("SET"), []byte("x"), []byte("y")}})
					b.Reset()
					f.Snapshot(&b)
				}
				sink, err := snaps.Create(raft.SnapshotVersionMax, snapAt, 1, raft.Configuration{}, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				sink.Write(b.Bytes())
				sink.Close()
			}
		}
		return ReadNode(id, d, t.TempDir(), nil)
	}
	// b's newest snapshot is at the last index, which the others' logs
	// reach: its state there comes from the snapshot, with its term.
	a, b := mk("a", false, 10), mk("b", false, 20)
	targets := Targets(map[string][]SnapState{"a": a.Snapshots, "b": b.Snapshots}, map[string]uint64{"a": a.Last, "b": b.Last})
	states := []NodeState{ReadNode("a", filepath.Join(dir, "a"), t.TempDir(), targets), ReadNode("b", filepath.Join(dir, "b"), t.TempDir(), targets)}
	if v, common := CheckConverge(states); len(v) != 0 || common != 20 {
		t.Fatalf("clean: %v at %d", v, common)
	}
	c := mk("c", true, 10)
	states = append(states, ReadNode("c", filepath.Join(dir, "c"), t.TempDir(), targets))
	_ = c
	if v, _ := CheckConverge(states); len(v) == 0 {
		t.Fatal("a snapshot that differs from the log was not caught")
	}
}
