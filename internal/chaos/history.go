package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Outcome is what a client knows about an operation once it returns.
type Outcome int

const (
	// OK: the server answered (a nil reply included).
	OK Outcome = iota
	// Fail: the operation certainly had no effect (TRYAGAIN, or the
	// connection could not be made, so nothing was sent).
	Fail
	// Info: indeterminate. It was sent and may or may not have taken
	// effect, now or later: a timeout, a broken connection, "ERR outcome
	// unknown", or any error the harness cannot prove harmless.
	Info
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Fail:
		return "fail"
	}
	return "info"
}

// MarshalText writes the outcome as ok, fail or info.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads what MarshalText wrote (a history.jsonl read back).
func (o *Outcome) UnmarshalText(b []byte) error {
	switch string(b) {
	case "ok":
		*o = OK
	case "fail":
		*o = Fail
	case "info":
		*o = Info
	default:
		return fmt.Errorf("chaos: unknown outcome %q (want ok, fail or info)", b)
	}
	return nil
}

// Classify turns the error of one request into an outcome. Only errors that
// prove nothing was applied are Fail; everything else after the request may
// have left the client is Info, never Fail.
func Classify(err error) Outcome {
	if err == nil || errors.Is(err, redis.Nil) {
		return OK
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		switch {
		case strings.HasPrefix(msg, "TRYAGAIN"):
			return Fail // deadbolt: nothing was proposed
		case strings.HasPrefix(msg, "ERR this node was removed"):
			return Fail // checked before anything is proposed
		case strings.HasPrefix(msg, "EXECABORT"), strings.HasPrefix(msg, "WRONGTYPE"),
			strings.HasPrefix(msg, "NOSCRIPT"):
			return Fail // refused before running
		case strings.HasPrefix(msg, "MISCONF"):
			// A full disk. deadbolt refuses the write before proposing it,
			// or its leader's append failed with ENOSPC having stored
			// nothing (cluster/diskspace.go); Redis refuses the command
			// before running it. Either way it never takes effect.
			return Fail
		case strings.HasPrefix(msg, "LOADING"), strings.HasPrefix(msg, "MASTERDOWN"),
			strings.HasPrefix(msg, "READONLY"), strings.HasPrefix(msg, "NOREPLICAS"):
			return Fail // Redis: refused, not applied
		}
		return Info
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return Fail // never connected: nothing sent
	}
	if errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed) {
		return Fail // no connection was taken from the pool
	}
	return Info
}

// Clock gives every recorded time as nanoseconds since the run started,
// on the monotonic clock.
type Clock struct{ start time.Time }

// NewClock starts a clock at now.
func NewClock() *Clock { return &Clock{start: time.Now()} }

// Now is the time since the start.
func (c *Clock) Now() int64 { return int64(time.Since(c.start)) }

// Start is the wall-clock time the run started.
func (c *Clock) Start() time.Time { return c.start }

// Op is one operation of the register or list workload.
type Op struct {
	Process  int     `json:"process"`
	Kind     string  `json:"kind"` // register | list
	F        string  `json:"f"`    // read | write | cas | append
	Key      string  `json:"key"`
	Via      string  `json:"via"`  // plain | eval | multi | watch
	Node     string  `json:"node"` // the node the client talked to
	Arg      string  `json:"arg,omitempty"`
	Arg2     string  `json:"arg2,omitempty"`
	Invoke   int64   `json:"invoke"`
	Complete int64   `json:"complete"`
	Outcome  Outcome `json:"outcome"`
	// Results: a read's value (Exists false for nil), a CAS's success, an
	// append's new length, a list read's elements.
	Value  string   `json:"value,omitempty"`
	Exists bool     `json:"exists,omitempty"`
	CASOK  bool     `json:"cas_ok,omitempty"`
	Len    int64    `json:"len,omitempty"`
	Elems  []string `json:"elems,omitempty"`
	Err    string   `json:"err,omitempty"`
	Final  bool     `json:"final,omitempty"` // a read made after healing
}

// Do runs fn, times it and classifies its error into op.
func (c *Clock) Do(ctx context.Context, op *Op, fn func(ctx context.Context) error) {
	op.Invoke = c.Now()
	err := fn(ctx)
	op.Complete = c.Now()
	op.Outcome = Classify(err)
	if err != nil && !errors.Is(err, redis.Nil) {
		op.Err = err.Error()
	}
}
