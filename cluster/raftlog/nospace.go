package raftlog

import (
	"errors"
	"syscall"
)

// IsNoSpace reports whether err comes from a file system that is full
// (ENOSPC) or a quota that is used up (EDQUOT). The store's appends fail
// with such an error only before anything was stored: the log is as it
// was, and the next append may succeed once space returns.
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
