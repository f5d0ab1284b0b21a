package family

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	semSetPermitsScript = load("sem_set_permits")
	semAcquireScript    = load("sem_acquire")
	semReleaseScript    = load("sem_release")
	semAddPermitsScript = load("sem_add_permits")
	semDrainScript      = load("sem_drain")
)

// Semaphore is Redisson's semaphore: a string counter of free permits;
// releases publish the new count on redisson_sc:{name}.
type Semaphore struct {
	C    redis.UniversalClient
	Name string
}

// Channel is redisson_sc:{name}.
func (s *Semaphore) Channel() string { return channelName("redisson_sc", s.Name) }

// TrySetPermits sets the permits if they were never set; life > 0 gives
// the counter a lifetime (SET PX).
func (s *Semaphore) TrySetPermits(ctx context.Context, permits int, life time.Duration) (bool, error) {
	args := []any{permits}
	if life > 0 {
		args = append(args, life.Milliseconds())
	}
	n, err := semSetPermitsScript.Run(ctx, s.C, []string{s.Name, s.Channel()}, args...).Int64()
	return n == 1, err
}

// TryAcquire takes permits if that many are free.
func (s *Semaphore) TryAcquire(ctx context.Context, permits int) (bool, error) {
	n, err := semAcquireScript.Run(ctx, s.C, []string{s.Name}, permits).Int64()
	return n == 1, err
}

// Release gives permits back. The script answers nothing: the reply must
// be nil.
func (s *Semaphore) Release(ctx context.Context, permits int) error {
	err := semReleaseScript.Run(ctx, s.C, []string{s.Name, s.Channel()}, permits).Err()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err == nil {
		return errors.New("release script answered a value, want nil")
	}
	return err
}

// AddPermits adds permits and returns the new count.
func (s *Semaphore) AddPermits(ctx context.Context, permits int) (int64, error) {
	return semAddPermitsScript.Run(ctx, s.C, []string{s.Name, s.Channel()}, permits).Int64()
}

// Drain takes every free permit and returns how many there were.
func (s *Semaphore) Drain(ctx context.Context) (int64, error) {
	return semDrainScript.Run(ctx, s.C, []string{s.Name}).Int64()
}
