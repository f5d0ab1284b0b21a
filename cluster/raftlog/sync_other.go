//go:build !linux

package raftlog

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

// startWriteback does nothing here: the sync that follows writes the data.
func startWriteback(f *os.File, off, n int64) {}
