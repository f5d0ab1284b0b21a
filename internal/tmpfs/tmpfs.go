//go:build linux

// Package tmpfs gives tests a small file system that really fills up: a
// tmpfs mounted for the test (which needs root), and ballast files that
// take its free space and give it back.
package tmpfs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory and returns it;
// it is unmounted when the test ends. Without the right to mount, the
// test is skipped, or fails when CI is "true" (a missing capability must
// not pass there unnoticed).
func Mount(tb testing.TB, size int64) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)); err != nil {
		msg := "tmpfs: cannot mount a tmpfs (needs root): " + err.Error()
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			tb.Errorf("tmpfs: unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Free is the space left for an unprivileged writer on the file system
// that holds path.
func Free(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Fill writes a ballast file in dir until the file system holding it
// has at most leave bytes free (all of it with leave 0: the next write
// of any size fails with ENOSPC), and returns the ballast's path. Remove
// it to give the space back.
func Fill(tb testing.TB, dir string, leave int64) string {
	tb.Helper()
	f, err := os.CreateTemp(dir, "ballast-*")
	if err != nil {
		tb.Fatalf("tmpfs: ballast: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = 0xba
	}
	for {
		free, err := Free(dir)
		if err != nil {
			tb.Fatal(err)
		}
		if free <= leave {
			break
		}
		n := min(int64(len(buf)), free-leave)
		if _, err := f.Write(buf[:n]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			tb.Fatalf("tmpfs: ballast: %v", err)
		}
	}
	return f.Name()
}
