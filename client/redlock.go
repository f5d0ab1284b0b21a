package client

import "time"

// RedLock is Redisson's RedissonRedLock: Redlock over independent
// servers. It is held when a majority (N/2+1) of its locks, one per
// server, are taken; each lock is waited for at most the remaining wait
// divided by N, and a lease that ran out while the locks were being taken
// makes the attempt fail. Unlock releases every lock and succeeds when a
// majority did.
//
// On deadbolt a single lock is already safe across failover (it is on a
// quorum of disks before the reply); RedLock is for independent servers
// such as several plain Redis instances.
type RedLock struct {
	MultiLock
}

// NewRedLock combines locks, one per independent server, into a
// Redlock.
func NewRedLock(locks ...Locker) *RedLock {
	n := len(locks)
	return &RedLock{MultiLock: MultiLock{
		locks:  locks,
		quorum: n/2 + 1,
		lockWait: func(remain time.Duration) time.Duration {
			return max(remain/time.Duration(max(n, 1)), time.Millisecond)
		},
		red: true,
	}}
}
