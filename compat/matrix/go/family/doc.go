// Package family is the compatibility matrix's own small client for
// Redisson's lock family, written from Redisson's documented behaviour
// (the seed articles and shared/CLIENTS.md), not from its code: the
// reentrant lock (the seed articles' scripts, verbatim), fair lock,
// read-write lock, semaphore, permit-expirable semaphore, count-down
// latch, fenced lock, and MultiLock/RedLock over independent nodes.
//
// It reproduces what reaches the server — key layout, channel names and
// payloads, the Lua constructs the scripts use, the reply shapes — so the
// matrix can check that deadbolt serves those patterns as Redis does. It
// is not an application client: no reconnection logic of its own, no
// thread identities, and the waiting loops are minimal. lua/*.lua hold the
// scripts; the first line of each says what the script does and what
// KEYS and ARGV hold, and is not sent.
//
// It depends on go-redis only (not on the project's client package).
package family
