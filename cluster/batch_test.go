package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// fakeFuture is a raft.ApplyFuture answered by the test.
type fakeFuture struct {
	done chan struct{}
	err  error
	resp interface{}
}

func (f *fakeFuture) Error() error          { <-f.done; return f.err }
func (f *fakeFuture) Response() interface{} { return f.resp }
func (f *fakeFuture) Index() uint64         { return 0 }

// fakeLog stands in for raft: it records each proposed entry and answers
// it when the test says so, by "applying" it: each command's result is its
// first argument.
type fakeLog struct {
	mu      sync.Mutex
	entries [][]Entry
	futures []*fakeFuture
	fail    error // answer every entry with this error instead
	hold    bool  // keep futures open until release
	next    chan struct{}
}

func newFakeLog() *fakeLog { return &fakeLog{next: make(chan struct{}, 1024)} }

func (l *fakeLog) apply(data []byte, _ time.Duration) raft.ApplyFuture {
	es, err := DecodeEntries(data)
	if err != nil {
		panic(err)
	}
	f := &fakeFuture{done: make(chan struct{})}
	results := make([]fsm.Result, len(es))
	for i, e := range es {
		results[i] = fsm.Result{Reply: resp.BulkReply(e.Cmd.Args[0])}
	}
	if len(es) == 1 && data[0] == envelopeVersion {
		f.resp = results[0]
	} else {
		f.resp = results
	}
	l.mu.Lock()
	l.entries = append(l.entries, es)
	l.futures = append(l.futures, f)
	f.err = l.fail
	hold := l.hold
	l.mu.Unlock()
	if !hold {
		close(f.done)
	}
	l.next <- struct{}{}
	return f
}

// release answers every open future.
func (l *fakeLog) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hold = false
	for _, f := range l.futures {
		select {
		case <-f.done:
		default:
			close(f.done)
		}
	}
}

func (l *fakeLog) count() (entries, commands int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, es := range l.entries {
		commands += len(es)
	}
	return len(l.entries), commands
}

func startProposer(tb testing.TB, l *fakeLog, inflight int) *proposer {
	tb.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	p := newProposer(l.apply, time.Second, inflight, stop)
	p.start(&wg)
	tb.Cleanup(func() {
		l.release()
		close(stop)
		wg.Wait()
		<-p.done
	})
	return p
}

func envFor(s string) []byte {
	return AppendEntry(nil, Entry{Time: 1, Cmd: fsm.Command{Args: args(s)}})
}

// TestProposerBatches: commands that wait while an entry is in flight go
// into one entry, and each caller gets its own command's result.
func TestProposerBatches(t *testing.T) {
	l := newFakeLog()
	l.hold = true
	p := startProposer(t, l, 1)
	first := make(chan error, 1)
	go func() {
		res, err := p.propose(context.Background(), envFor("first"))
		if err == nil && string(res.Reply.Str) != "first" {
			err = fmt.Errorf("got %q", res.Reply.Str)
		}
		first <- err
	}()
	<-l.next // the first entry is in flight: the rest must wait for it
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			want := fmt.Sprint("cmd", i)
			res, err := p.propose(context.Background(), envFor(want))
			if err == nil && string(res.Reply.Str) != want {
				err = fmt.Errorf("%s got %q", want, res.Reply.Str)
			}
			errs <- err
		}(i)
	}
	waitQueued(t, p, n)
	l.release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if err := <-first; err != nil {
		t.Error(err)
	}
	entries, commands := l.count()
	if entries != 2 || commands != n+1 {
		t.Fatalf("%d commands in %d entries, want %d in 2", commands, entries, n+1)
	}
	if l.entries[0][0].Time != 1 || len(l.entries[1]) != n {
		t.Fatalf("entries: %+v", l.entries)
	}
}

func waitQueued(tb testing.TB, p *proposer, n int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		q := len(p.queue)
		p.mu.Unlock()
		if q >= n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d commands queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestProposerBounds: an entry holds at most maxCommands commands and
// maxBytes bytes, except a single larger command, which goes alone.
func TestProposerBounds(t *testing.T) {
	l := newFakeLog()
	l.hold = true
	p := startProposer(t, l, 1)
	p.maxCommands = 4
	p.maxBytes = 64
	go p.propose(context.Background(), envFor("block"))
	<-l.next
	var wg sync.WaitGroup
	big := string(make([]byte, 100))
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := fmt.Sprint("c", i)
			if i == 5 {
				s = big
			}
			if res, err := p.propose(context.Background(), envFor(s)); err != nil || string(res.Reply.Str) != s {
				t.Errorf("%d: %v %q", i, err, res.Reply.Str)
			}
		}(i)
	}
	waitQueued(t, p, 10)
	l.release()
	wg.Wait()
	for i, es := range l.entries {
		size := 0
		for _, e := range es {
			size += len(AppendEntry(nil, e))
		}
		if len(es) > 4 || (len(es) > 1 && size > 64) {
			t.Errorf("entry %d: %d commands, %d bytes", i, len(es), size)
		}
	}
}

// TestProposerErrors: an entry raft refused gives every command in it
// TRYAGAIN; one that may be in the log gives every command "outcome
// unknown".
func TestProposerErrors(t *testing.T) {
	for _, tc := range []struct {
		raftErr error
		want    error
	}{
		{raft.ErrNotLeader, ErrNotLeader},
		{raft.ErrLeadershipTransferInProgress, ErrNotLeader},
		{raft.ErrEnqueueTimeout, ErrNotLeader},
		{raft.ErrLeadershipLost, ErrUnknownOutcome},
		{raft.ErrRaftShutdown, ErrUnknownOutcome},
		{errors.New("log store failed"), ErrUnknownOutcome},
	} {
		t.Run(tc.raftErr.Error(), func(t *testing.T) {
			l := newFakeLog()
			l.hold = true
			l.fail = tc.raftErr
			p := startProposer(t, l, 1)
			var wg sync.WaitGroup
			for i := 0; i < 20; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := p.propose(context.Background(), envFor("x")); !errors.Is(err, tc.want) {
						t.Errorf("err = %v, want %v", err, tc.want)
					}
				}()
			}
			<-l.next
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, proposed := l.count()
				p.mu.Lock()
				queued := len(p.queue)
				p.mu.Unlock()
				if proposed+queued == 20 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d proposed, %d queued", proposed, queued)
				}
				time.Sleep(time.Millisecond)
			}
			l.release()
			wg.Wait()
		})
	}
}

// TestProposerCallerGivesUp: a caller whose context ends while its command
// waits gets TRYAGAIN and its command is never proposed; one whose
// command is already proposed gets "outcome unknown". Neither disturbs
// the others.
func TestProposerCallerGivesUp(t *testing.T) {
	l := newFakeLog()
	l.hold = true
	p := startProposer(t, l, 1)
	proposed, cancelProposed := context.WithCancel(context.Background())
	errProposed := make(chan error, 1)
	go func() {
		_, err := p.propose(proposed, envFor("proposed"))
		errProposed <- err
	}()
	<-l.next
	waiting, cancelWaiting := context.WithCancel(context.Background())
	errWaiting := make(chan error, 1)
	go func() {
		_, err := p.propose(waiting, envFor("abandoned"))
		errWaiting <- err
	}()
	other := make(chan error, 1)
	go func() {
		res, err := p.propose(context.Background(), envFor("other"))
		if err == nil && string(res.Reply.Str) != "other" {
			err = fmt.Errorf("got %q", res.Reply.Str)
		}
		other <- err
	}()
	waitQueued(t, p, 2)
	cancelWaiting()
	if err := <-errWaiting; !errors.Is(err, ErrNotLeader) {
		t.Fatalf("caller that gave up before its command was proposed: %v", err)
	}
	cancelProposed()
	if err := <-errProposed; !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("caller that gave up after its command was proposed: %v", err)
	}
	l.release()
	if err := <-other; err != nil {
		t.Fatal(err)
	}
	for _, es := range l.entries {
		for _, e := range es {
			if string(e.Cmd.Args[0]) == "abandoned" {
				t.Fatal("an abandoned command was proposed")
			}
		}
	}
}

// TestProposerStop: commands still queued when the node stops were never
// proposed (TRYAGAIN); later ones are refused the same way.
func TestProposerStop(t *testing.T) {
	l := newFakeLog()
	l.hold = true
	stop := make(chan struct{})
	var wg sync.WaitGroup
	p := newProposer(l.apply, time.Second, 1, stop)
	p.start(&wg)
	go p.propose(context.Background(), envFor("in flight"))
	<-l.next
	queued := make(chan error, 1)
	go func() {
		_, err := p.propose(context.Background(), envFor("queued"))
		queued <- err
	}()
	waitQueued(t, p, 1)
	close(stop)
	wg.Wait()
	if err := <-queued; !errors.Is(err, ErrNotLeader) {
		t.Fatalf("queued at stop: %v", err)
	}
	if _, err := p.propose(context.Background(), envFor("late")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("after stop: %v", err)
	}
	l.release()
	<-p.done
}

// TestProposerSubmit: callers that do not wait (submit, the event loop's
// writes) share entries with waiting ones, and each callback gets its own
// command's outcome exactly once, including at stop.
func TestProposerSubmit(t *testing.T) {
	l := newFakeLog()
	l.hold = true
	stop := make(chan struct{})
	var wg sync.WaitGroup
	p := newProposer(l.apply, time.Second, 1, stop)
	p.start(&wg)

	type got struct {
		want string
		o    outcome
	}
	results := make(chan got, 100)
	submit := func(s string) { p.submit(envFor(s), func(o outcome) { results <- got{s, o} }) }
	submit("first")
	<-l.next // in flight; the next ones wait and share an entry
	waited := make(chan error, 1)
	go func() {
		res, err := p.propose(context.Background(), envFor("waiting"))
		if err == nil && string(res.Reply.Str) != "waiting" {
			err = fmt.Errorf("got %q", res.Reply.Str)
		}
		waited <- err
	}()
	for i := 0; i < 10; i++ {
		submit(fmt.Sprint("cmd", i))
	}
	waitQueued(t, p, 11)
	l.release()
	for i := 0; i < 11; i++ {
		r := <-results
		if r.o.err != nil || string(r.o.res.Reply.Str) != r.want {
			t.Fatalf("%s: %q, %v", r.want, r.o.res.Reply.Str, r.o.err)
		}
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if entries, commands := l.count(); entries != 2 || commands != 12 {
		t.Fatalf("%d commands in %d entries, want 12 in 2", commands, entries)
	}
	<-l.next // the second entry's

	// At stop: the entry in flight is answered by raft, the queued
	// command was never proposed, a later one is refused at once.
	l.mu.Lock()
	l.hold = true
	l.mu.Unlock()
	submit("in flight")
	<-l.next
	submit("queued")
	waitQueued(t, p, 1)
	close(stop)
	wg.Wait()
	if r := <-results; r.want != "queued" || !errors.Is(r.o.err, ErrNotLeader) {
		t.Fatalf("queued at stop: %s %v", r.want, r.o.err)
	}
	submit("late")
	if r := <-results; r.want != "late" || !errors.Is(r.o.err, ErrNotLeader) {
		t.Fatalf("after stop: %s %v", r.want, r.o.err)
	}
	l.release()
	<-p.done
	if r := <-results; r.want != "in flight" || r.o.err != nil {
		t.Fatalf("in flight at stop: %s %v", r.want, r.o.err)
	}
	select {
	case r := <-results:
		t.Fatalf("a second outcome: %+v", r)
	default:
	}
}

// A submitted command waits no longer than the proposer's timeout: one in
// an entry raft does not answer gets ErrUnknownOutcome, one still queued
// behind it ErrNotLeader and is never proposed; each callback runs once,
// and raft's late answer is dropped.
func TestProposerSubmitTimeout(t *testing.T) {
	l := newFakeLog()
	l.hold = true
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const timeout = 100 * time.Millisecond
	p := newProposer(l.apply, timeout, 1, stop)
	p.start(&wg)
	defer func() {
		close(stop)
		wg.Wait()
		<-p.done
	}()

	type got struct {
		name string
		err  error
		at   time.Duration
	}
	results := make(chan got, 10)
	start := time.Now()
	submit := func(s string) {
		p.submit(envFor(s), func(o outcome) { results <- got{s, o.err, time.Since(start)} })
	}
	submit("proposed")
	<-l.next // in flight, and raft never answers it
	submit("queued")
	waitQueued(t, p, 1)
	want := map[string]error{"proposed": ErrUnknownOutcome, "queued": ErrNotLeader}
	for i := 0; i < 2; i++ {
		var r got
		select {
		case r = <-results:
		case <-time.After(50 * timeout):
			t.Fatal("no answer long after the timeout")
		}
		if !errors.Is(r.err, want[r.name]) {
			t.Fatalf("%s: %v, want %v", r.name, r.err, want[r.name])
		}
		if r.at < timeout {
			t.Fatalf("%s answered after %v, before the timeout", r.name, r.at)
		}
	}
	l.release() // raft's answer comes after all
	select {
	case r := <-l.next:
		t.Fatalf("the dropped command was proposed: %v", r)
	case r := <-results:
		t.Fatalf("a second answer: %+v", r)
	case <-time.After(3 * timeout):
	}
	if entries, commands := l.count(); entries != 1 || commands != 1 {
		t.Fatalf("%d commands in %d entries, want 1 in 1", commands, entries)
	}
}
