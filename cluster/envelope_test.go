package cluster

import (
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
		got, err := DecodeEntry(AppendEntry(nil, e))
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
