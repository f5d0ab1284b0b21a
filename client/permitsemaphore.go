package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// noExpiry is the deadline score of a permit taken without a lease
// (Redisson's nonExpirableTimeout).
const noExpiry = "922337203685477"

// PermitExpirableSemaphore is Redisson's RPermitExpirableSemaphore: a
// semaphore whose permits have ids and, optionally, leases. The counter of
// free permits is the string key name; acquired permits are members of the
// sorted set "{name}:timeout" (16 raw bytes each) scored by their absolute
// deadline in ms (922337203685477 when they never expire). An expired
// permit returns to the counter the next time any script looks. Changes
// that add permits publish the new count on "redisson_sc:{name}".
//
// Permit ids are shown to callers as 32 lower-case hex digits, as Redisson
// shows them. Deadlines come from the client's wall clock.
type PermitExpirableSemaphore struct {
	c        *Client
	name     string
	timeouts string
	channel  string
}

// NewPermitExpirableSemaphore returns a handle on the semaphore name.
func (c *Client) NewPermitExpirableSemaphore(name string) *PermitExpirableSemaphore {
	return &PermitExpirableSemaphore{
		c: c, name: name,
		timeouts: suffixName(name, "timeout"),
		channel:  prefixName("redisson_sc", name),
	}
}

// Name is the semaphore's key.
func (s *PermitExpirableSemaphore) Name() string { return s.name }

func (s *PermitExpirableSemaphore) keys() []string { return []string{s.name, s.timeouts, s.channel} }

// TrySetPermits sets the number of permits if none are set yet.
func (s *PermitExpirableSemaphore) TrySetPermits(ctx context.Context, permits int) (bool, error) {
	return trySetPermits(ctx, s.c, s.name, s.channel, permits, 0)
}

// AddPermits adds n free permits (negative: takes some away).
func (s *PermitExpirableSemaphore) AddPermits(ctx context.Context, n int) error {
	return s.c.run(ctx, scriptSemRelease, []string{s.name, s.channel}, n, s.c.cfg.publish).Err()
}

// Acquire takes one permit, waiting as long as ctx allows, and returns
// its id. With lease > 0 the permit returns to the pool by itself after
// lease; with 0 it is held until released.
func (s *PermitExpirableSemaphore) Acquire(ctx context.Context, lease time.Duration) (string, error) {
	ids, err := s.TryAcquireN(ctx, 1, -1, lease)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// TryAcquire takes one permit within wait (0: one attempt; negative: as
// long as ctx allows). It returns the permit's id, or false when wait
// ran out.
func (s *PermitExpirableSemaphore) TryAcquire(ctx context.Context, wait, lease time.Duration) (string, bool, error) {
	ids, err := s.TryAcquireN(ctx, 1, wait, lease)
	if err != nil || ids == nil {
		return "", false, err
	}
	return ids[0], true, nil
}

// TryAcquireN takes n permits at once, all with the same lease, within
// wait. It returns their ids, or nil when wait ran out.
func (s *PermitExpirableSemaphore) TryAcquireN(ctx context.Context, n int, wait, lease time.Duration) ([]string, error) {
	if n <= 0 {
		return nil, fmt.Errorf("client: permits must be positive, got %d", n)
	}
	raw := make([][]byte, n)
	ids := make([]string, n)
	for i := range raw {
		raw[i] = make([]byte, 16)
		if _, err := rand.Read(raw[i]); err != nil {
			return nil, err
		}
		ids[i] = hex.EncodeToString(raw[i])
	}
	a := &acquirer{
		channel: s.channel,
		policy:  wakeAll,
		attempt: func(ctx context.Context) (bool, time.Duration, error) {
			now := nowMillis()
			deadline := noExpiry
			if lease > 0 {
				deadline = strconv.FormatInt(now+ms(lease), 10)
			}
			args := []any{n, deadline, now, noExpiry, s.c.cfg.publish}
			for _, r := range raw {
				args = append(args, r)
			}
			v, err := s.c.run(ctx, scriptPESAcquire, s.keys(), args...).Text()
			switch {
			case errors.Is(err, redis.Nil):
				return false, -1, nil
			case err != nil:
				return false, 0, err
			case v == "OK":
				return true, 0, nil
			case strings.HasPrefix(v, ":"):
				// The earliest lease ends then: look again at that time.
				at, perr := strconv.ParseFloat(v[1:], 64)
				if perr != nil {
					return false, 0, fmt.Errorf("%w: permit semaphore answered %q", ErrBadReply, v)
				}
				return false, max(time.Duration(int64(at)-nowMillis())*time.Millisecond, 0), nil
			}
			return false, 0, fmt.Errorf("%w: permit semaphore answered %q", ErrBadReply, v)
		},
		check: func(ctx context.Context) (bool, error) {
			// All ids go in together, so the first tells.
			_, err := s.c.rdb.ZScore(ctx, s.timeouts, string(raw[0])).Result()
			if errors.Is(err, redis.Nil) {
				return false, nil
			}
			return err == nil, err
		},
	}
	ok, err := s.c.acquire(ctx, wait, a)
	if !ok {
		return nil, err
	}
	return ids, nil
}

func decodePermit(id string) ([]byte, error) {
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != 16 {
		return nil, fmt.Errorf("%w: malformed permit id %q", ErrPermitNotFound, id)
	}
	return b, nil
}

// Release gives a permit back. It returns ErrPermitNotFound when the
// permit is not held (released before, or expired).
func (s *PermitExpirableSemaphore) Release(ctx context.Context, id string) error {
	ok, err := s.TryRelease(ctx, id)
	if err == nil && !ok {
		return ErrPermitNotFound
	}
	return err
}

// TryRelease gives a permit back and reports whether it was held. An
// expired permit that nobody had reaped yet returns to the pool, but
// counts as not held.
func (s *PermitExpirableSemaphore) TryRelease(ctx context.Context, id string) (bool, error) {
	b, err := decodePermit(id)
	if err != nil {
		return false, err
	}
	n, err := s.c.run(ctx, scriptPESRelease, s.keys(), nowMillis(), s.c.cfg.publish, b).Int64()
	return n == 1, err
}

// UpdateLeaseTime gives a held permit a new lease, counted from now, and
// reports whether the permit was held.
func (s *PermitExpirableSemaphore) UpdateLeaseTime(ctx context.Context, id string, lease time.Duration) (bool, error) {
	b, err := decodePermit(id)
	if err != nil {
		return false, err
	}
	now := nowMillis()
	n, err := s.c.run(ctx, scriptPESUpdateLease, s.keys(), now, s.c.cfg.publish, b, now+ms(lease)).Int64()
	return n == 1, err
}

// AvailablePermits returns expired permits to the pool, then reports how
// many are free.
func (s *PermitExpirableSemaphore) AvailablePermits(ctx context.Context) (int64, error) {
	return s.c.run(ctx, scriptPESAvailable, s.keys(), nowMillis(), s.c.cfg.publish).Int64()
}

// Delete removes the semaphore and its permits, and reports whether it
// existed.
func (s *PermitExpirableSemaphore) Delete(ctx context.Context) (bool, error) {
	n, err := s.c.rdb.Del(ctx, s.name, s.timeouts).Result()
	return n > 0, err
}
