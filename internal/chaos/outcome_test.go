package chaos

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Every outcome survives a history.jsonl line (an Op written as JSON and
// read back), and a word that is no outcome is refused.
func TestOutcomeRoundTrip(t *testing.T) {
	for _, o := range []Outcome{OK, Fail, Info} {
		op := Op{Process: 3, Kind: "register", F: "write", Key: "r1", Via: "plain", Node: "n1", Arg: "7", Invoke: 1, Complete: 2, Outcome: o}
		b, err := json.Marshal(op)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"outcome":"`+o.String()+`"`) {
			t.Fatalf("%v marshals as %s", o, b)
		}
		var back Op
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back, op) {
			t.Fatalf("read back %+v, want %+v", back, op)
		}
	}
	var o Outcome
	if err := o.UnmarshalText([]byte("maybe")); err == nil {
		t.Fatal("UnmarshalText(maybe): no error")
	}
}
