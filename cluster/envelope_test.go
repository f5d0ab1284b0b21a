package cluster

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/deadbolt/deadbolt/fsm"
)

func args(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func TestEnvelopeRoundTrip(t *testing.T) {
	entries := []Entry{
		{Time: 1_700_000_000_123, Cmd: fsm.Command{DB: 3, Args: args("SET", "k", "v\x00\r\n")}},
		{Time: -5, Cmd: fsm.Command{Args: args("EVAL", "return 1", "0")}},
		{Time: 7, Cmd: fsm.Command{DB: 15, Tx: [][][]byte{args("INCR", "a"), args("GET", "")}, Watch: []fsm.Watch{{DB: 1, Key: "w", Version: 1 << 40}}}},
		{Time: 9, Cmd: fsm.Command{Tx: [][][]byte{}}},
	}
	for _, e := range entries {
		env := AppendEntry(nil, e)
		if len(env) > maxEntrySize(e) {
			t.Fatalf("%+v: envelope of %d bytes, bound %d", e, len(env), maxEntrySize(e))
		}
		got, err := DecodeEntry(env)
		if err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, e)
		}
	}
}

func TestEnvelopeRejects(t *testing.T) {
	good := AppendEntry(nil, Entry{Time: 1, Cmd: fsm.Command{Args: args("GET", "k")}})
	bad := [][]byte{
		nil,
		{9},
		good[:len(good)-1],
		append(append([]byte{}, good...), 0),
		AppendEntry(nil, Entry{Cmd: fsm.Command{DB: 16, Args: args("GET")}}),
		{envelopeVersion, 2, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for _, b := range bad {
		if _, err := DecodeEntry(b); err == nil {
			t.Errorf("DecodeEntry(%q) accepted", b)
		}
	}
}

// FuzzDecodeEntry: arbitrary bytes never panic, and whatever decodes
// encodes back to the same bytes.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(AppendEntry(nil, Entry{Time: 1, Cmd: fsm.Command{Args: args("SET", "k", "v")}}))
	f.Add(AppendEntry(nil, Entry{Time: 2, Cmd: fsm.Command{Tx: [][][]byte{args("PING")}, Watch: []fsm.Watch{{Key: "k"}}}}))
	f.Add(AppendEntry(nil, Entry{Time: 3, Cmd: fsm.Command{Args: args("FCALL", "f", "0"), User: "u", FoldFunctionNames: true}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			return
		}
		again := AppendEntry(nil, e)
		e2, err := DecodeEntry(again)
		if err != nil || !reflect.DeepEqual(e, e2) {
			t.Fatalf("re-encode of %q failed: %v", b, err)
		}
	})
}

func TestBatchRoundTrip(t *testing.T) {
	entries := []Entry{
		{Time: 10, Cmd: fsm.Command{Args: args("EVALSHA", "abc", "1", "lock", "30000", "id:1")}},
		{Time: 9, Cmd: fsm.Command{DB: 2, Tx: [][][]byte{args("SET", "a", "1")}}},
		{Time: 11, Cmd: fsm.Command{Tx: [][][]byte{}}},
	}
	var envs [][]byte
	for _, e := range entries {
		envs = append(envs, AppendEntry(nil, e))
	}
	for n := 1; n <= len(entries); n++ {
		got, err := DecodeEntries(AppendBatch(nil, envs[:n]...))
		if err != nil {
			t.Fatalf("%d commands: %v", n, err)
		}
		if !reflect.DeepEqual(got, entries[:n]) {
			t.Fatalf("%d commands:\n got %+v\nwant %+v", n, got, entries[:n])
		}
	}
	// A version-1 envelope decodes as one entry.
	got, err := DecodeEntries(envs[0])
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], entries[0]) {
		t.Fatalf("DecodeEntries(version 1) = %+v, %v", got, err)
	}
	// DecodeEntry stays version 1 only.
	if _, err := DecodeEntry(AppendBatch(nil, envs[0])); err == nil {
		t.Fatal("DecodeEntry accepted a batch")
	}
}

// lockBatch is a batch of n Redisson lock EVALSHAs, each its own lock.
func lockBatch(n int) []byte {
	var envs [][]byte
	for i := range n {
		envs = append(envs, AppendEntry(nil, Entry{Time: int64(i), Cmd: fsm.Command{Args: args("EVALSHA",
			"0123456789abcdef0123456789abcdef01234567", "1", fmt.Sprintf("lock:{%d}", i), "30000", fmt.Sprintf("owner:%d", i))}}))
	}
	return AppendBatch(nil, envs...)
}

// The commands of a batch share their argument slices' backing array
// (argSlots): a command's arguments, appended to, must not overwrite the
// next command's, as the state machine may append to what it is given.
func TestBatchArgsDoNotOverlap(t *testing.T) {
	got, err := DecodeEntries(lockBatch(20))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].Cmd.Args = append(got[i].Cmd.Args, []byte("extra"))
	}
	for i, e := range got {
		if len(e.Cmd.Args) != 7 || string(e.Cmd.Args[0]) != "EVALSHA" || string(e.Cmd.Args[3]) != fmt.Sprintf("lock:{%d}", i) || string(e.Cmd.Args[6]) != "extra" {
			t.Fatalf("command %d after appending to every command's arguments: %q", i, e.Cmd.Args)
		}
	}
}

func TestBatchRejects(t *testing.T) {
	one := AppendEntry(nil, Entry{Time: 1, Cmd: fsm.Command{Args: args("GET", "k")}})
	good := AppendBatch(nil, one, one)
	bad := map[string][]byte{
		"empty":           {batchVersion},
		"no commands":     {batchVersion, 0},
		"truncated":       good[:len(good)-1],
		"trailing":        append(append([]byte{}, good...), 0),
		"count too large": {batchVersion, 3, 1, 1},
		"huge count":      {batchVersion, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge length":     {batchVersion, 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"nested batch":    AppendBatch(nil, AppendBatch(nil, one)),
		"bad command":     AppendBatch(nil, one, one[:len(one)-1]),
		"empty command":   AppendBatch(nil, one, nil),
		"unknown version": {3, 1, 0},
	}
	for name, b := range bad {
		if got, err := DecodeEntries(b); err == nil {
			t.Errorf("%s: DecodeEntries(%q) accepted: %+v", name, b, got)
		}
	}
}

// FuzzDecodeEntries: arbitrary bytes never panic, and whatever decodes as
// a batch encodes back to the same commands.
func FuzzDecodeEntries(f *testing.F) {
	one := AppendEntry(nil, Entry{Time: 1, Cmd: fsm.Command{Args: args("SET", "k", "v")}})
	f.Add(one)
	f.Add(AppendBatch(nil, one, one))
	f.Add(AppendBatch(nil, AppendEntry(nil, Entry{Time: 2, Cmd: fsm.Command{Tx: [][][]byte{args("PING")}, Watch: []fsm.Watch{{Key: "k"}}}})))
	// version 4: a folding FCALL, one of a restricted user, alone and in
	// a batch
	marked := AppendEntry(nil, Entry{Time: 3, Cmd: fsm.Command{Args: args("FCALL", "abc", "0"), FoldFunctionNames: true}})
	markedUser := AppendEntry(nil, Entry{Time: 4, Cmd: fsm.Command{Args: args("FCALL", "abc", "0"), FoldFunctionNames: true, User: "u"}})
	f.Add(marked)
	f.Add(markedUser)
	f.Add(AppendBatch(nil, one, marked, markedUser))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := DecodeEntries(b)
		verr := validEntries(b)
		if (verr == nil) != (err == nil) {
			t.Fatalf("%q: DecodeEntries %v, validEntries %v", b, err, verr)
		}
		// and of the same kind: a newer build's entry (stop, naming it)
		// or a malformed one
		if errors.Is(err, ErrNewerEnvelope) != errors.Is(verr, ErrNewerEnvelope) {
			t.Fatalf("%q: DecodeEntries %v, validEntries %v: one says a newer build wrote it", b, err, verr)
		}
		if err != nil {
			return
		}
		if len(es) == 0 {
			t.Fatalf("%q decoded to no commands", b)
		}
		var envs [][]byte
		for _, e := range es {
			envs = append(envs, AppendEntry(nil, e))
		}
		again, err := DecodeEntries(AppendBatch(nil, envs...))
		if err != nil || !reflect.DeepEqual(es, again) {
			t.Fatalf("re-encode of %q failed: %v", b, err)
		}
	})
}
