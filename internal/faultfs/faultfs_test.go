//go:build linux

package faultfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The faults reach a program through the kernel: its own fdatasync(2)
// and write(2) return EIO for the chosen files only, and pass again once
// cleared; the data goes through to the backing directory.
func TestFaults(t *testing.T) {
	f := MountTest(t)
	open := func(name string) *os.File {
		t.Helper()
		fh, err := os.OpenFile(filepath.Join(f.Dir, name), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fh.Close() })
		return fh
	}
	if err := os.Mkdir(filepath.Join(f.Dir, "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	seg, other := open("log/0001.seg"), open("stable")
	for _, fh := range []*os.File{seg, other} {
		if _, err := fh.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Fdatasync(int(fh.Fd())); err != nil {
			t.Fatalf("fdatasync with no fault: %v", err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(f.Backing, "log", "0001.seg")); err != nil || string(b) != "hello" {
		t.Fatalf("backing file = %q, %v", b, err)
	}

	f.FailSync("*.seg")
	if err := syscall.Fdatasync(int(seg.Fd())); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fdatasync of a matching file = %v, want EIO", err)
	}
	if err := seg.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync of a matching file = %v, want EIO", err)
	}
	if err := syscall.Fdatasync(int(other.Fd())); err != nil {
		t.Fatalf("fdatasync of another file = %v", err)
	}
	f.FailSync("")
	if err := syscall.Fdatasync(int(other.Fd())); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fdatasync with every file failing = %v, want EIO", err)
	}
	f.Clear()
	if err := syscall.Fdatasync(int(seg.Fd())); err != nil {
		t.Fatalf("fdatasync after Clear = %v", err)
	}

	f.FailWrite("stable")
	if _, err := other.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write of a matching file = %v, want EIO", err)
	}
	if _, err := seg.WriteAt([]byte(" world"), 5); err != nil {
		t.Fatalf("write of another file = %v", err)
	}
	f.Clear()
	if _, err := other.WriteAt([]byte("x"), 0); err != nil {
		t.Fatalf("write after Clear = %v", err)
	}
	if n := f.Faults(); n != 4 {
		t.Fatalf("%d faults counted, want 4", n)
	}
	if b, err := os.ReadFile(filepath.Join(f.Backing, "log", "0001.seg")); err != nil || string(b) != "hello world" {
		t.Fatalf("backing file = %q, %v", b, err)
	}
}

// Unmount works with a file still open (lazily), and the mount point is
// then an ordinary empty directory.
func TestUnmountBusy(t *testing.T) {
	f := MountTest(t)
	fh, err := os.Create(filepath.Join(f.Dir, "busy"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.Dir, "busy")); !os.IsNotExist(err) {
		t.Fatalf("after unmount the file is still seen through the mount point: %v", err)
	}
}
