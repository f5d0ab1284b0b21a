//go:build linux

package faultfs

import (
	"os"
	"path/filepath"
	"testing"
)

// MountTest mounts a fault-injecting loopback of a new temporary backing
// directory for the test and unmounts it when the test ends (lazily if a
// file on it is still open). Without FUSE the test is skipped with the
// reason, or fails when CI is "true": there the machine is expected to
// have FUSE, and a missing one must not pass unnoticed.
func MountTest(tb testing.TB) *FS {
	tb.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("FUSE is needed for real I/O errors and CI=true: %v", err)
		}
		tb.Skipf("no FUSE here, so no real I/O errors: %v", err)
	}
	base := tb.TempDir()
	backing, dir := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	for _, d := range []string{backing, dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	f, err := Mount(dir, backing)
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal(err)
		}
		tb.Skipf("cannot mount FUSE here (needs root or fusermount): %v", err)
	}
	// Registered after TempDir's own clean-up, so it runs before it.
	tb.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			tb.Errorf("%v", err)
		}
	})
	return f
}
