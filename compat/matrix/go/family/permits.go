package family

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	pesSetPermitsScript  = load("pes_set_permits")
	pesAcquireScript     = load("pes_acquire")
	pesReleaseScript     = load("pes_release")
	pesLeaseScript       = load("pes_lease")
	pesUpdateLeaseScript = load("pes_update_lease")
	pesCountsScript      = load("pes_counts")
)

// NoExpiry is the score of a permit without a lease: Java's
// Long.MAX_VALUE / 10000, as Redisson stores it.
const NoExpiry = "922337203685477"

// PermitSemaphore is Redisson's permit-expirable semaphore: a counter of
// free permits and a zset {name}:timeout from binary permit ids (16 raw
// bytes) to lease deadlines in ms (NoExpiry for none). Scripts compare
// scores as the strings Redis prints; they take the client's clock.
type PermitSemaphore struct {
	C    redis.UniversalClient
	Name string
	Now  func() time.Time // the client's clock; time.Now if nil
}

func (s *PermitSemaphore) now() int64 {
	if s.Now != nil {
		return s.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// Channel is redisson_sc:{name}.
func (s *PermitSemaphore) Channel() string { return channelName("redisson_sc", s.Name) }

// TimeoutKey is {name}:timeout.
func (s *PermitSemaphore) TimeoutKey() string {
	for _, r := range s.Name {
		if r == '{' {
			return s.Name + ":timeout"
		}
	}
	return "{" + s.Name + "}:timeout"
}

// NewPermitID returns 16 random bytes.
func NewPermitID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return string(b[:])
}

// TrySetPermits sets the permits once: true on the script's OK status.
func (s *PermitSemaphore) TrySetPermits(ctx context.Context, permits int) (bool, error) {
	v, err := pesSetPermitsScript.Run(ctx, s.C, []string{s.Name, s.Channel()}, permits).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if v != "OK" {
		return false, fmt.Errorf("set permits answered %#v, want the status OK", v)
	}
	return true, nil
}

// Acquire is the outcome of TryAcquire: the id granted, or how long until
// the nearest lease ends (Wait >= 0), or neither (no lease ends).
type Acquire struct {
	ID      string
	Granted bool
	Wait    int64 // ms, -1 if none
}

// TryAcquire takes a permit under id, until deadline (zero: no lease).
func (s *PermitSemaphore) TryAcquire(ctx context.Context, id string, deadline time.Time) (Acquire, error) {
	score := NoExpiry
	if !deadline.IsZero() {
		score = fmt.Sprint(deadline.UnixMilli())
	}
	v, err := pesAcquireScript.Run(ctx, s.C, []string{s.Name, s.TimeoutKey(), s.Channel()}, 1, score, id, s.now()).Result()
	switch x := v.(type) {
	case nil:
		if errors.Is(err, redis.Nil) {
			return Acquire{Wait: -1}, nil
		}
		return Acquire{}, err
	case string:
		return Acquire{ID: x, Granted: true}, nil
	case int64:
		return Acquire{Wait: x}, nil
	}
	return Acquire{}, fmt.Errorf("acquire answered %T %#v", v, v)
}

// Release gives permits back: how many of ids were held.
func (s *PermitSemaphore) Release(ctx context.Context, ids ...string) (int64, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return pesReleaseScript.Run(ctx, s.C, []string{s.Name, s.TimeoutKey(), s.Channel()}, args...).Int64()
}

// Lease returns a permit's deadline score exactly as the server prints
// it, and false if the permit is not held.
func (s *PermitSemaphore) Lease(ctx context.Context, id string) (string, bool, error) {
	v, err := pesLeaseScript.Run(ctx, s.C, []string{s.TimeoutKey()}, id).Text()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return v, err == nil, err
}

// UpdateLease moves a live permit's deadline.
func (s *PermitSemaphore) UpdateLease(ctx context.Context, id string, deadline time.Time) (bool, error) {
	n, err := pesUpdateLeaseScript.Run(ctx, s.C, []string{s.TimeoutKey()}, id, deadline.UnixMilli(), s.now()).Int64()
	return n == 1, err
}

// Counts returns the free and the held permits, after giving back
// expired ones.
func (s *PermitSemaphore) Counts(ctx context.Context) (free, held int64, err error) {
	v, err := pesCountsScript.Run(ctx, s.C, []string{s.Name, s.TimeoutKey()}, s.now()).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(v) != 2 {
		return 0, 0, fmt.Errorf("counts answered %v, want two integers", v)
	}
	return v[0], v[1], nil
}
