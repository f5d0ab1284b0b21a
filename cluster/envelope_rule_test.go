package cluster

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
)

// Envelope version 4 (envelope.go): a command under a rule newer than
// version 1, named by flags. Today's only rule: function names compare
// without case (fsm.Command.FoldFunctionNames).

// mainEnvelope encodes e as the build before version 4 (main at cce4561)
// did, from the layout alone: version 1, or 3 with a user.
func mainEnvelope(e Entry) []byte {
	v := byte(envelopeVersion)
	if e.Cmd.User != "" {
		v = userVersion
	}
	b := []byte{v}
	b = binary.AppendVarint(b, e.Time)
	b = binary.AppendUvarint(b, uint64(e.Cmd.DB))
	putArgs := func(args [][]byte) {
		b = binary.AppendUvarint(b, uint64(len(args)))
		for _, a := range args {
			b = binary.AppendUvarint(b, uint64(len(a)))
			b = append(b, a...)
		}
	}
	putArgs(e.Cmd.Args)
	b = binary.AppendUvarint(b, uint64(len(e.Cmd.Tx)))
	for _, a := range e.Cmd.Tx {
		putArgs(a)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Cmd.Watch)))
	for _, w := range e.Cmd.Watch {
		b = binary.AppendUvarint(b, uint64(w.DB))
		b = binary.AppendUvarint(b, uint64(len(w.Key)))
		b = append(b, w.Key...)
		b = binary.AppendUvarint(b, w.Version)
	}
	if e.Cmd.User != "" {
		b = binary.AppendUvarint(b, uint64(len(e.Cmd.User)))
		b = append(b, e.Cmd.User...)
	}
	return b
}

// A command without the mark is encoded byte for byte as before version
// 4, and one with it in version 4; each decodes to what was encoded, alone
// and in a batch.
func TestEnvelopeFoldVersion(t *testing.T) {
	plain := []Entry{
		{Time: 5, Cmd: fsm.Command{Args: args("FCALL", "Abc", "0")}},
		{Time: 6, Cmd: fsm.Command{Args: args("FUNCTION", "LOAD", "#!lua name=b\n"), User: "alice"}},
		{Time: 7, Cmd: fsm.Command{DB: 2, Tx: [][][]byte{args("FCALL", "abc", "0")}, Watch: []fsm.Watch{{DB: 1, Key: "w", Version: 9}}}},
	}
	for _, e := range plain {
		if got, want := AppendEntry(nil, e), mainEnvelope(e); string(got) != string(want) {
			t.Errorf("%+v: unmarked envelope %q, the build before version 4 wrote %q", e.Cmd, got, want)
		}
	}
	for _, e := range plain {
		e.Cmd.FoldFunctionNames = true
		env := AppendEntry(nil, e)
		if env[0] != flagsVersion {
			t.Errorf("%+v: marked command in version %d", e.Cmd, env[0])
		}
		if len(env) > maxEntrySize(e) {
			t.Errorf("%+v: envelope of %d bytes, bound %d", e.Cmd, len(env), maxEntrySize(e))
		}
		got, err := DecodeEntry(env)
		if err != nil || !reflect.DeepEqual(got, e) {
			t.Errorf("round trip: got %+v, %v; want %+v", got, err, e)
		}
		if err := validEntries(env); err != nil {
			t.Errorf("validEntries: %v", err)
		}
		batch := AppendBatch(nil, mainEnvelope(plain[0]), env)
		es, err := DecodeEntries(batch)
		if err != nil || len(es) != 2 || es[0].Cmd.FoldFunctionNames || !reflect.DeepEqual(es[1], e) {
			t.Errorf("batch: got %+v, %v", es, err)
		}
		if err := validEntries(batch); err != nil {
			t.Errorf("validEntries(batch): %v", err)
		}
	}
}

// A version-4 flag this build does not know is a newer build's rule: it is
// refused by name, alone or in a batch, on receipt (validEntries) and when
// applied; a version 4 with no flag, or with a user and no rule, is
// malformed.
func TestEnvelopeUnknownFlagRefused(t *testing.T) {
	e := Entry{Time: 1, Cmd: fsm.Command{Args: args("FCALL", "f", "0")}}
	base := mainEnvelope(e)[1:]
	unknown := append(append([]byte{flagsVersion}, base...), 0x05) // fold and bit 4
	none := append(append([]byte{flagsVersion}, base...), 0)
	for name, b := range map[string][]byte{"alone": unknown, "in a batch": AppendBatch(nil, mainEnvelope(e), unknown)} {
		if _, err := DecodeEntries(b); !errors.Is(err, ErrNewerEnvelope) || !strings.Contains(err.Error(), "flags 0x5") {
			t.Errorf("%s: DecodeEntries: %v, want ErrNewerEnvelope naming the flags", name, err)
		}
		if err := validEntries(b); !errors.Is(err, ErrNewerEnvelope) {
			t.Errorf("%s: validEntries: %v", name, err)
		}
	}
	// flags 2 alone (a user, no rule) is a second encoding of version 3
	// that no build writes: malformed too
	userOnly := append(append(append([]byte{flagsVersion}, base...), flagUser), 1, 'u')
	for name, b := range map[string][]byte{"without flags": none, "with a user alone": userOnly} {
		if _, err := DecodeEntry(b); err == nil || errors.Is(err, ErrNewerEnvelope) {
			t.Errorf("version 4 %s: %v, want malformed", name, err)
		}
		if err := validEntries(b); err == nil || errors.Is(err, ErrNewerEnvelope) {
			t.Errorf("validEntries: version 4 %s: %v, want malformed", name, err)
		}
	}
	// Applied (a log holding it): the node stops by name, as for a newer
	// version byte, and applies nothing of it.
	var stopped error
	r := newRaftFSM(fsm.New(fsm.Options{}), nil)
	r.onNewer = func(err error) { stopped = err }
	if res := r.applyLocked(&raft.Log{Index: 7, Type: raft.LogCommand, Data: unknown}); res != nil || !errors.Is(stopped, ErrNewerEnvelope) || !strings.Contains(stopped.Error(), "log entry 7") {
		t.Errorf("applying it: %v, stop %v", res, stopped)
	}
}
