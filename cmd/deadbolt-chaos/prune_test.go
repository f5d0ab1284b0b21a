package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestPruneOutKeepsFilesRemovesData: a passing run's directory loses its
// data directories and keeps the report and logs.
func TestPruneOutKeepsFilesRemovesData(t *testing.T) {
	out := t.TempDir()
	for _, d := range []string{"n1/log", "n2/snapshots", "redis-h1"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, d, "data"), make([]byte, 1<<16), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"report.txt", "n1.log", "history.json"} {
		if err := os.WriteFile(filepath.Join(out, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var w bytes.Buffer
	pruneOut(out, &w)
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := []string{"history.json", "n1.log", "report.txt"}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	if !strings.Contains(w.String(), "n1 n2 redis-h1") {
		t.Fatalf("does not say what it removed: %q", w.String())
	}
}

// TestMountsUnder reads mount points below a directory out of
// mountinfo lines, escapes included, and not a sibling that shares a
// prefix.
func TestMountsUnder(t *testing.T) {
	info := strings.Join([]string{
		`22 1 252:0 / / rw,relatime shared:1 - ext4 /dev/vda rw`,
		`80 22 0:50 / /tmp/deadbolt-chaos-1/n1 rw - tmpfs tmpfs rw,size=20480k`,
		`81 22 0:51 / /tmp/deadbolt-chaos-1/n\0402 rw - fuse faultfs rw`,
		`82 22 0:52 / /tmp/deadbolt-chaos-10/n1 rw - tmpfs tmpfs rw`,
	}, "\n")
	got := mountsUnder(info, "/tmp/deadbolt-chaos-1/")
	if want := []string{"/tmp/deadbolt-chaos-1/n1", "/tmp/deadbolt-chaos-1/n 2"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := mountsUnder(info, "/tmp/other"); len(got) != 0 {
		t.Fatalf("got %q under /tmp/other", got)
	}
}

// TestPruneOutLeavesMountedDirs: with a tmpfs mounted below it (root
// only), nothing is removed.
func TestPruneOutLeavesMountedDirs(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root: this test mounts a tmpfs")
		}
		t.Skip("mounts a tmpfs: needs root")
	}
	out := t.TempDir()
	mp := filepath.Join(out, "n1")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mountTmpfsForTest(mp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmountForTest(mp) })
	if err := os.WriteFile(filepath.Join(mp, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	pruneOut(out, &w)
	if _, err := os.Stat(filepath.Join(mp, "data")); err != nil {
		t.Fatalf("removed through a mount: %v", err)
	}
	if !strings.Contains(w.String(), "still mounted") {
		t.Fatalf("does not say why it kept it: %q", w.String())
	}
}

func mountTmpfsForTest(dir string) error {
	return syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m")
}

func unmountForTest(dir string) { syscall.Unmount(dir, 0) }
