//go:build !linux || race

package raftlog

import "os"

// appendWrite writes b at off in f.
func appendWrite(f *os.File, b []byte, off int64) error {
	_, err := f.WriteAt(b, off)
	return err
}

// appendSync is fdatasync for an append.
func appendSync(f *os.File) error { return fdatasync(f) }
