package family

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

var (
	latchSetScript       = load("latch_set")
	latchCountDownScript = load("latch_count_down")
	latchDeleteScript    = load("latch_delete")
)

// CountDownLatch is Redisson's count-down latch: a counter key that is
// deleted when it reaches zero, with messages on
// redisson_countdownlatch__channel__{name}: 0 opened, 1 re-armed.
type CountDownLatch struct {
	C    redis.UniversalClient
	Name string
}

// Channel is redisson_countdownlatch__channel__{name}.
func (l *CountDownLatch) Channel() string {
	for _, r := range l.Name {
		if r == '{' {
			return "redisson_countdownlatch__channel__" + l.Name
		}
	}
	return "redisson_countdownlatch__channel__{" + l.Name + "}"
}

// TrySetCount arms the latch unless it is armed.
func (l *CountDownLatch) TrySetCount(ctx context.Context, count int) (bool, error) {
	n, err := latchSetScript.Run(ctx, l.C, []string{l.Name, l.Channel()}, "1", count).Int64()
	return n == 1, err
}

// CountDown counts down once. The script answers nothing: the reply
// must be nil.
func (l *CountDownLatch) CountDown(ctx context.Context) error {
	err := latchCountDownScript.Run(ctx, l.C, []string{l.Name, l.Channel()}, "0").Err()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err == nil {
		return errors.New("count down script answered a value, want nil")
	}
	return err
}

// Delete deletes the latch, opening it for waiters.
func (l *CountDownLatch) Delete(ctx context.Context) (bool, error) {
	n, err := latchDeleteScript.Run(ctx, l.C, []string{l.Name, l.Channel()}, "0").Int64()
	return n == 1, err
}
