//go:build !race

package server

import "testing"

// A request that parsed (no error) costs tooLarge nothing: errors.As's
// target escaped and made one allocation per request before the check.
func TestTooLargeAllocatesNothing(t *testing.T) {
	var c *conn // not used when there is no error
	args := [][]byte{[]byte("EVALSHA"), []byte("0123"), []byte("1"), []byte("k")}
	if n := testing.AllocsPerRun(100, func() {
		if c.tooLarge(args, nil) {
			t.Fatal("tooLarge without an error")
		}
	}); n != 0 {
		t.Fatalf("tooLarge made %v allocations, want 0", n)
	}
}
