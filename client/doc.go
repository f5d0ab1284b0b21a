// Package client is Redisson's lock family for Go, on top of go-redis,
// wire-compatible with Redisson: the same keys, hash fields, channels,
// messages and replies, so a Go process and a Java Redisson process
// contend correctly for the same locks, against deadbolt or plain Redis,
// with a single, Sentinel (failover) or cluster go-redis client.
//
//	c := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}))
//	lock := c.NewLock("orders")
//	if err := lock.Lock(ctx); err != nil { return err }
//	defer lock.Unlock(ctx)
//	// ... one owner at a time in here ...
//
// Objects: Lock (reentrant, watchdog, pub/sub wake-up, unlock latch),
// FairLock, ReadWriteLock, Semaphore, PermitExpirableSemaphore,
// CountDownLatch, FencedLock, SpinLock, MultiLock and RedLock.
//
// # Owners
//
// Redisson identifies a lock holder as "<client uuid>:<thread id>". Go has
// no thread ids, so here an owner is a value: every handle returned by
// NewLock, NewFairLock, NewReadWriteLock, NewFencedLock or NewSpinLock
// carries one (a fresh one, or the one given with WithOwner). The handle
// is the "thread": calling Lock twice through it re-enters, whichever
// goroutines make the calls, and needs two Unlocks. Goroutines that must
// exclude each other use separate handles, which are cheap (no I/O).
// Handles sharing an Owner re-enter each other's locks, like code running
// on one Java thread.
//
// # Leases and the watchdog
//
// A lock taken with lease 0 is kept alive by the Client's watchdog, which
// renews it every third of WithWatchdogTimeout (30 s by default) until
// Unlock, until the lock is found gone (Lost is closed, Unlock returns
// ErrLockLost), or until the Client is closed (the lock then expires, as
// when a process dies). A lock taken with a lease expires after it.
//
// # Waiting
//
// A caller that cannot have an object subscribes to its channel, tries
// again, and sleeps until a release message, the holder's TTL, or its
// context. Nothing polls except SpinLock. DESIGN.md in this directory
// describes the wire layout per object and how the pieces fit.
package client
