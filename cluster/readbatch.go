package cluster

import "sync"

// batcher runs rounds one at a time, on a goroutine of its own that lives
// while items wait: a round takes every item waiting when it starts, and
// items that arrive during a round share the next one. A leader's
// confirmation rounds (readindex.go) and a follower's read-point requests
// (followerread.go) are both batched so: a round's cost (messages, a
// goroutine's wake-up) is paid once for the reads that share it, and no
// read waits for a timer.
type batcher[T any] struct {
	// round runs round number n (1, 2, ...) for batch, which it must not
	// keep.
	round func(n uint64, batch []T)

	mu      sync.Mutex
	running bool
	closed  bool
	waiting []T
	spare   []T // a finished batch's array, for the next to fill
	rounds  uint64
}

// add queues x for the next round, begun after this call; false, having
// queued nothing, once the batcher is closed.
func (b *batcher[T]) add(x T) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.waiting = append(b.waiting, x)
	if !b.running {
		b.running = true
		go b.loop()
	}
	return true
}

func (b *batcher[T]) loop() {
	var done []T
	for {
		b.mu.Lock()
		if done != nil {
			b.spare = done[:0]
		}
		batch := b.waiting
		if len(batch) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.waiting, b.spare = b.spare, nil
		b.rounds++
		n := b.rounds
		b.mu.Unlock()
		b.round(n, batch)
		clear(batch) // the callbacks it held may be collected
		done = batch
	}
}

// count returns the number of rounds begun.
func (b *batcher[T]) count() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rounds
}

// close makes add refuse from now on; a round under way finishes.
func (b *batcher[T]) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}
