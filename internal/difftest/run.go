package difftest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Timeouts for one reply, for one pushed message, and for dialing. A reply
// may take long under -race: a script that recurses until the Lua stack
// overflows takes seconds there.
const (
	replyTimeout = 30 * time.Second
	pushTimeout  = 2 * time.Second
	dialTimeout  = 5 * time.Second
	// maxFailures consecutive steps without a reply from a server end the
	// run: the server hangs, and every further step would wait too.
	maxFailures = 3
)

// errClosed is a connection the server closed: after QUIT, or after a
// protocol error. Both servers closing counts as agreement.
var errClosed = errors.New("connection closed")

// Mismatch is one step whose replies differ.
type Mismatch struct {
	File string
	Line int
	Text string // the step as written
	Want string // Redis's reply, quoted
	Got  string // deadbolt's reply, quoted
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s:%d: %s\n\tredis:    %s\n\tdeadbolt: %s", m.File, m.Line, m.Text, m.Want, m.Got)
}

// Run executes a transcript against a reference server (real Redis) and
// the server under test, both freshly FLUSHALLed, and returns every step
// whose replies differ.
func Run(t *Transcript, refAddr, testAddr string) []Mismatch {
	return RunProto(t, refAddr, testAddr, 2)
}

// RunProto is Run with every connection switched to RESP version proto
// (HELLO 3) as soon as it is opened, before the transcript's first step on
// it; HELLO's own reply is not compared (ids and versions differ).
func RunProto(t *Transcript, refAddr, testAddr string, proto int) []Mismatch {
	r := &runner{t: t, sides: [2]*side{{addr: refAddr, proto: proto}, {addr: testAddr, proto: proto}}}
	defer r.close()
	r.do(Step{Line: 0, Text: "FLUSHALL (set-up)", Kind: Send, Args: [][]byte{[]byte("FLUSHALL")}, Opts: Options{Conn: 1, Tolerance: -1}})
	for _, s := range t.Steps {
		if !r.do(s) {
			break
		}
	}
	return r.out
}

type runner struct {
	t     *Transcript
	sides [2]*side // reference, under test
	out   []Mismatch
}

type side struct {
	addr     string
	proto    int
	conns    [maxConns + 1]*client
	failures int // consecutive steps without a reply
}

type client struct {
	c  net.Conn
	rd *bufio.Reader
}

func (r *runner) close() {
	for _, s := range r.sides {
		for i, c := range s.conns {
			if c != nil {
				c.c.Close()
				s.conns[i] = nil
			}
		}
	}
}

func (r *runner) mismatch(s Step, want, got string) {
	r.out = append(r.out, Mismatch{File: r.t.Name, Line: s.Line, Text: s.Text, Want: want, Got: got})
}

// do runs one step and reports whether the run should go on.
func (r *runner) do(s Step) bool {
	if s.Kind == WaitGone {
		r.waitGone(s)
		return true
	}
	var vals [2]Value
	var errs [2]error
	for i, sd := range r.sides {
		vals[i], errs[i] = sd.roundTrip(s)
		switch {
		case errs[i] == nil || errs[i] == errClosed:
			sd.failures = 0
		case s.Kind == Send:
			// A message that never arrives (Recv) is a finding; a
			// command without a reply may mean a hung server.
			sd.failures++
		}
	}
	switch {
	case errs[0] == errClosed && errs[1] == errClosed:
	case errs[0] != nil || errs[1] != nil:
		r.mismatch(s, describe(vals[0], errs[0]), describe(vals[1], errs[1]))
	case !Equal(vals[0], vals[1], s.Opts):
		r.mismatch(s, describe(vals[0], nil), describe(vals[1], nil))
	}
	for i, sd := range r.sides {
		if sd.failures >= maxFailures {
			name := [2]string{"redis", "deadbolt"}[i]
			r.mismatch(Step{Line: s.Line, Text: "(run stopped)"}, "", fmt.Sprintf("%s did not reply %d times in a row; the rest of the file is skipped", name, maxFailures))
			return false
		}
	}
	return true
}

// roundTrip sends the step's command (unless it only reads) on the step's
// connection and reads one reply. After an I/O error the connection is
// dropped, and the next step on it dials again.
func (sd *side) roundTrip(s Step) (Value, error) {
	c, err := sd.conn(s.Opts.Conn)
	if err != nil {
		return Value{}, err
	}
	if s.Kind == Send {
		req := s.Args[0]
		if !s.Opts.Raw {
			req = appendCommand(nil, s.Args)
		}
		_ = c.c.SetWriteDeadline(time.Now().Add(replyTimeout))
		if _, err := c.c.Write(req); err != nil {
			sd.drop(s.Opts.Conn)
			if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
				return Value{}, errClosed
			}
			return Value{}, fmt.Errorf("write: %w", err)
		}
	}
	timeout := replyTimeout
	if s.Kind == Recv {
		timeout = pushTimeout
	}
	_ = c.c.SetReadDeadline(time.Now().Add(timeout))
	v, err := readValue(c.rd)
	if err != nil {
		// A pushed message that does not come leaves the connection as
		// it was (subscribed); anything else leaves it out of step.
		var ne net.Error
		timedOut := errors.As(err, &ne) && ne.Timeout()
		if !timedOut || s.Kind != Recv {
			sd.drop(s.Opts.Conn)
		}
		switch {
		case timedOut:
			return Value{}, fmt.Errorf("no reply within %v", timeout)
		case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
			return Value{}, errClosed
		}
		return Value{}, fmt.Errorf("read: %w", err)
	}
	return v, nil
}

func (sd *side) conn(n int) (*client, error) {
	if c := sd.conns[n]; c != nil {
		return c, nil
	}
	nc, err := net.DialTimeout("tcp", sd.addr, dialTimeout)
	if err != nil {
		return nil, err
	}
	c := &client{c: nc, rd: bufio.NewReaderSize(nc, 64<<10)}
	if sd.proto != 2 {
		if err := c.hello(sd.proto); err != nil {
			nc.Close()
			return nil, err
		}
	}
	sd.conns[n] = c
	return c, nil
}

// hello switches the connection to RESP version proto.
func (c *client) hello(proto int) error {
	_ = c.c.SetDeadline(time.Now().Add(replyTimeout))
	defer c.c.SetDeadline(time.Time{})
	req := appendCommand(nil, [][]byte{[]byte("HELLO"), []byte(strconv.Itoa(proto))})
	if _, err := c.c.Write(req); err != nil {
		return err
	}
	v, err := readValue(c.rd)
	if err != nil {
		return err
	}
	if v.Kind == '-' {
		return fmt.Errorf("HELLO %d: %s", proto, v.Str)
	}
	return nil
}

func (sd *side) drop(n int) {
	if c := sd.conns[n]; c != nil {
		c.c.Close()
		sd.conns[n] = nil
	}
}

// waitGone polls EXISTS on both servers until each says 0 for every key.
func (r *runner) waitGone(s Step) {
	exists := append([][]byte{[]byte("EXISTS")}, s.Args...)
	probe := Step{Line: s.Line, Text: s.Text, Kind: Send, Args: exists, Opts: Options{Conn: s.Opts.Conn, Tolerance: -1}}
	var last [2]string
	for i, sd := range r.sides {
		deadline := time.Now().Add(waitGoneTimeout)
		for {
			v, err := sd.roundTrip(probe)
			last[i] = describe(v, err)
			if err == nil && v.Kind == ':' && v.Int == 0 {
				last[i] = ""
				break
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if last[0] != "" || last[1] != "" {
		r.mismatch(s, "gone: "+orOK(last[0]), "gone: "+orOK(last[1]))
	}
}

func orOK(s string) string {
	if s == "" {
		return "yes"
	}
	return "no, EXISTS still says " + s
}

// maxShown bounds a reply quoted in a message.
const maxShown = 2000

func describe(v Value, err error) string {
	if err != nil {
		return "<" + err.Error() + ">"
	}
	q := strconv.Quote(string(v.Raw))
	if len(q) > maxShown {
		q = q[:maxShown] + "...(" + strconv.Itoa(len(v.Raw)) + " bytes)"
	}
	return q
}

// Summary formats mismatches one per paragraph, for a test failure.
func Summary(ms []Mismatch) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.String())
		b.WriteByte('\n')
	}
	return b.String()
}
