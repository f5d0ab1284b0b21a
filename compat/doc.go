// Package compat holds tests only: unmodified lock clients (go-redis v9
// running Redisson's lock scripts, redsync v4, bsm/redislock) driven
// against an in-process deadbolt node and, with the same transcripts and
// the same assertions, against a real redis-server, so that the tests show
// the two behave alike for what lock clients rely on.
//
// testdata/*.lua are Redisson's lock scripts as the seed articles quote
// them; the first line of each names its source and is not sent.
package compat
