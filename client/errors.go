package client

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Errors returned by the lock family. Match them with errors.Is.
var (
	// ErrNotOwner: the caller tried to unlock (or renew) a lock that its
	// owner does not hold, and this client never saw that owner take it.
	// Redisson throws IllegalMonitorStateException here.
	ErrNotOwner = errors.New("client: lock is not held by this owner")

	// ErrLockLost: this client took the lock for the owner, but it is no
	// longer held when the owner unlocks or renews it: its lease ran out,
	// the watchdog could not renew it in time, or someone force-unlocked it.
	ErrLockLost = errors.New("client: lock was lost (lease expired or lock was taken away)")

	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client: closed")

	// ErrPermitNotFound: a permit id given to a permit-expirable semaphore
	// is unknown: never acquired, already released, or expired.
	ErrPermitNotFound = errors.New("client: permit not found (released, expired or never acquired)")

	// ErrNoLocks: a MultiLock or RedLock was built without locks.
	ErrNoLocks = errors.New("client: no locks given")

	// ErrBadReply: the server answered with a reply the lock family does
	// not expect (for example a script that is not ours under the same
	// name, or a key of another type).
	ErrBadReply = errors.New("client: unexpected reply")
)

// transient reports whether err is worth retrying after a pause: the
// server could not be reached, or said to try again (no leader yet, a
// node loading or failing over). Context errors are never transient.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, redis.ErrClosed) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range []string{"TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "READONLY", "NOREPLICAS"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return unknownOutcome(err)
	}
	return false
}

// unknownOutcome reports whether err leaves it open whether a write was
// applied: a connection lost after the command was sent, or deadbolt's
// "outcome unknown" after a leader change. A retry must then be
// idempotent, or check first.
func unknownOutcome(err error) bool {
	if err == nil {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		return strings.HasPrefix(re.Error(), "ERR outcome unknown")
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isNil(err error) bool { return errors.Is(err, redis.Nil) }
