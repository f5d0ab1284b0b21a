package fsm

import (
	"bytes"
	"strings"
	"testing"
)

func args(s string) Command {
	var a [][]byte
	for _, f := range strings.Fields(s) {
		a = append(a, []byte(f))
	}
	return Command{Args: a}
}

// The setting survives a snapshot as it was given: n stays on after A,
// although CONFIG GET does not print it. Without the setting the snapshot
// stays version 1, which nodes from before replicated settings read.
func TestNotifySettingInSnapshot(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	var plain bytes.Buffer
	if err := f.Snapshot(&plain); err != nil {
		t.Fatal(err)
	}
	if v := plain.Bytes()[len(snapshotMagic)]; v != 1 {
		t.Errorf("a snapshot without settings is version %d", v)
	}
	if r := f.Apply(1000, SetConfigCommand("notify-keyspace-events", "AKEn")).Reply; r.IsError() {
		t.Fatal(r.String())
	}
	var buf bytes.Buffer
	if err := f.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	g := New(Options{})
	defer g.Close()
	if err := g.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if got := g.Setting("notify-keyspace-events"); got != "AKE" {
		t.Errorf("restored setting prints %q, want AKE", got)
	}
	res := g.Apply(2000, args("SET k v"))
	var events []string
	for _, e := range res.Effects {
		events = append(events, string(e.Channel)+" "+string(e.Message))
	}
	want := "__keyspace@0__:k new|__keyevent@0__:new k|__keyspace@0__:k set|__keyevent@0__:set k"
	if got := strings.Join(events, "|"); got != want {
		t.Errorf("events after restore:\n got %s\nwant %s", got, want)
	}
	if r := g.Apply(3000, SetConfigCommand("notify-keyspace-events", "Q")).Reply; !r.IsError() {
		t.Error("a bad value was accepted")
	}
	// Nothing is published while the setting is off, and reads never do.
	g.Apply(4000, SetConfigCommand("notify-keyspace-events", ""))
	if res := g.Apply(5000, args("SET k w")); len(res.Effects) != 0 {
		t.Errorf("events with notifications off: %v", res.Effects)
	}
}
