package main

import (
	"slices"
	"testing"
)

// binaryFor: a node on the older build gets its binary and only the flags
// it knows (with their values); a node on the current one gets
// --preserve-downgrade while an older build is in play.
func TestBinaryFor(t *testing.T) {
	upgrade.mu.Lock()
	saved := upgrade.old
	upgrade.old = "/old/deadbolt"
	upgrade.oldFlags = map[string]bool{"id": true, "data-dir": true, "insecure-cluster": true}
	upgrade.mu.Unlock()
	defer func() { upgrade.mu.Lock(); upgrade.old = saved; upgrade.mu.Unlock() }()
	n := &node{id: "n1"}
	args := []string{"netns", "exec", "ns1", "/new/deadbolt", "--id", "n1", "--disk-fail-file", "/f", "--data-dir", "/d", "--insecure-cluster", "--min-free-disk=1mb"}
	if got := binaryFor(n, args); !slices.Equal(got, append(slices.Clone(args), "--preserve-downgrade")) {
		t.Fatalf("current build: %q", got)
	}
	upgrade.mu.Lock()
	upgrade.onOld[n] = true
	upgrade.mu.Unlock()
	defer func() { upgrade.mu.Lock(); delete(upgrade.onOld, n); upgrade.mu.Unlock() }()
	want := []string{"netns", "exec", "ns1", "/old/deadbolt", "--id", "n1", "--data-dir", "/d", "--insecure-cluster"}
	if got := binaryFor(n, args); !slices.Equal(got, want) {
		t.Fatalf("older build: %q, want %q", got, want)
	}
}
