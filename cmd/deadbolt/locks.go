package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deadbolt/deadbolt/resp"
)

// runLocks is "deadbolt locks": it connects to a node, sends DEADBOLT
// LOCKS and prints the locks as a table.
func runLocks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("deadbolt locks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr    = fs.String("addr", "127.0.0.1:6379", "a node's RESP `host:port` (any node: followers forward the read)")
		user    = fs.String("user", "", "AUTH as this ACL `user` (with --pass); it sees only the locks whose keys it may read")
		pass    = fs.String("pass", "", "AUTH with this `password` (--requirepass of the node, or --user's; default: $DEADBOLT_PASSWORD, then $REDISCLI_AUTH)")
		match   = fs.String("match", "", "only lock names matching this glob `pattern`")
		kind    = fs.String("kind", "", "only this `kind`: reentrant, fair, fenced, rwlock, semaphore, permit-semaphore, latch, string")
		count   = fs.Int("count", 0, "list at most this many locks (0: the server's default, 100)")
		timeout = fs.Duration("timeout", 5*time.Second, "give up after this long")
	)
	fs.StringVar(pass, "password", "", "the same as --pass")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: deadbolt locks [flags]\n\nLists the locks a deadbolt node holds (DEADBOLT LOCKS): who holds each, since when, its lease and who waits.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *pass == "" {
		*pass = passwordFromEnv()
	}
	cmd := []string{"DEADBOLT", "LOCKS"}
	if *match != "" {
		cmd = append(cmd, "MATCH", *match)
	}
	if *kind != "" {
		cmd = append(cmd, "KIND", *kind)
	}
	if *count > 0 {
		cmd = append(cmd, "COUNT", strconv.Itoa(*count))
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", *addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	rd := bufio.NewReader(nc)
	call := func(args ...string) (resp.Reply, error) {
		var b []byte
		b = fmt.Appendf(b, "*%d\r\n", len(args))
		for _, a := range args {
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := nc.Write(b); err != nil {
			return resp.Reply{}, err
		}
		r, err := resp.ReadReply(rd, 512<<20)
		if errors.Is(err, io.EOF) {
			// A TLS port closes a connection that starts in plain text.
			err = fmt.Errorf("%s closed the connection (a TLS port? deadbolt locks speaks plain TCP: give the node's --addr port, or send DEADBOLT LOCKS with redis-cli --tls): %w", *addr, err)
		}
		if err == nil && r.IsError() {
			err = errors.New(r.String())
		}
		return r, err
	}
	if *user != "" {
		if _, err := call("AUTH", *user, *pass); err != nil {
			return fmt.Errorf("AUTH %s: %w", *user, err)
		}
	} else if *pass != "" {
		if _, err := call("AUTH", *pass); err != nil {
			return fmt.Errorf("AUTH: %w", err)
		}
	}
	r, err := call(cmd...)
	if err != nil {
		return err
	}
	return printLocks(stdout, r)
}

// pairs reads a RESP2 map (flat key, value pairs).
func pairs(r resp.Reply) map[string]resp.Reply {
	m := make(map[string]resp.Reply, len(r.Elems)/2)
	for i := 0; i+1 < len(r.Elems); i += 2 {
		m[r.Elems[i].String()] = r.Elems[i+1]
	}
	return m
}

func printLocks(w io.Writer, r resp.Reply) error {
	if r.Type != resp.Array {
		return fmt.Errorf("unexpected reply to DEADBOLT LOCKS: %q", r.Append(nil))
	}
	if len(r.Elems) == 0 {
		fmt.Fprintln(w, "no locks held")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DB\tNAME\tKIND\tHOLDERS\tHELD SINCE (UTC)\tLEASE\tWAITERS\tQUEUE\tINFO")
	for _, l := range r.Elems {
		m := pairs(l)
		var holders []string
		for _, h := range m["holders"].Elems {
			hm := pairs(h)
			s := hm["id"].String()
			if n := hm["count"].Int; n != 1 {
				s += " x" + strconv.FormatInt(n, 10)
			}
			if e, ok := hm["expires-ms"]; ok && e.Int >= 0 {
				s += " until " + clock(e.Int)
			}
			holders = append(holders, s)
		}
		var queue []string
		for _, q := range m["queue"].Elems {
			qm := pairs(q)
			queue = append(queue, qm["id"].String()+" by "+clock(qm["deadline-ms"].Int))
		}
		var info []string
		for _, k := range []string{"mode", "token", "permits", "count"} {
			if v, ok := m[k]; ok {
				s := v.String()
				if v.Type == resp.Int {
					s = strconv.FormatInt(v.Int, 10)
				}
				info = append(info, k+"="+s)
			}
		}
		since, lease, waiters := "unknown", "none", "n/a (clients poll)"
		if t := m["held-since-ms"].Int; t >= 0 {
			since = clock(t)
		}
		if t := m["lease-ms"].Int; t >= 0 {
			lease = (time.Duration(t) * time.Millisecond).String()
		}
		if n := m["waiters"].Int; n >= 0 {
			waiters = strconv.FormatInt(n, 10)
			if k := m["waiters-nodes"].Int; k != 1 {
				waiters += " on " + strconv.FormatInt(k, 10) + " nodes"
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m["db"].Int, m["name"].String(), m["kind"].String(),
			dash(strings.Join(holders, ", ")), since, lease, waiters, dash(strings.Join(queue, ", ")), dash(strings.Join(info, " ")))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clock prints a state time (Unix ms) in UTC.
func clock(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
}
