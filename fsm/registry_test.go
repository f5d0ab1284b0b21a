package fsm

import (
	"bytes"
	"testing"
)

// Lookup finds every registered command, in any case, through its quick
// slot or the map alike, and nothing else: names one letter off from a
// real one (many of them share its slot) are not found.
func TestLookupQuickTable(t *testing.T) {
	inQuick := 0
	for name, want := range commands {
		if quick[quickSlot([]byte(name))] == want {
			inQuick++
		}
		for _, n := range [][]byte{[]byte(name), bytes.ToUpper([]byte(name)), mixedCase(name)} {
			if got, ok := Lookup(n); !ok || got != want {
				t.Fatalf("Lookup(%q) = %v, %v; want %s", n, got, ok, want.Name)
			}
		}
		for i := range len(name) {
			for _, ch := range []byte("aez_0") {
				off := []byte(name)
				if off[i] == ch {
					continue
				}
				off[i] = ch
				if _, real := commands[string(off)]; real {
					continue
				}
				if got, ok := Lookup(off); ok {
					t.Fatalf("Lookup(%q) found %s", off, got.Name)
				}
			}
		}
	}
	// The Redisson scripts' commands are in the table, not behind it.
	for _, name := range []string{"evalsha", "exists", "hincrby", "hset", "pexpire", "hexists", "del", "publish"} {
		if quick[quickSlot([]byte(name))] != commands[name] {
			t.Errorf("%s is not in its quick slot", name)
		}
	}
	if inQuick < len(commands)/2 {
		t.Errorf("only %d of %d commands in the quick table", inQuick, len(commands))
	}
	for _, n := range []string{"", "x", "notacommand", "hsetx", "hse"} {
		if got, ok := Lookup([]byte(n)); ok {
			t.Errorf("Lookup(%q) found %s", n, got.Name)
		}
	}
}

func mixedCase(s string) []byte {
	b := []byte(s)
	for i := 0; i < len(b); i += 2 {
		if b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return b
}

// BenchmarkLookup looks up the commands a Redisson lock+unlock pair
// runs, as sent (EVALSHA) and as its scripts call them.
func BenchmarkLookup(b *testing.B) {
	names := [][]byte{[]byte("EVALSHA"), []byte("exists"), []byte("hincrby"), []byte("pexpire"), []byte("hset"),
		[]byte("EVALSHA"), []byte("hexists"), []byte("hincrby"), []byte("del"), []byte("publish")}
	for b.Loop() {
		for _, n := range names {
			if _, ok := Lookup(n); !ok {
				b.Fatal(n)
			}
		}
	}
}
