package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The redis-cli column: transcripts (compat/matrix/cli/*.txt) fed to an
// unmodified redis-cli, its output compared line by line with what the
// transcript says Redis prints (checked against redis-server in the
// reference column).
//
// A transcript is sections. "=== commands" lines starting with "> " are
// typed into one redis-cli session (its standard input); the other lines
// are the expected output. "=== subscribe NAME: ARGS" starts a redis-cli
// running ARGS (SUBSCRIBE ...) in the background: the lines before
// "--- confirmed" must appear before the next section runs, the rest by
// the end of the transcript. "# modes: ..." says which columns run it.
// ${P} is the run's key prefix; ${LEADER_IP} and ${LEADER_PORT} the
// leader's address.

type transcript struct {
	name     string
	modes    []string
	sections []section
}

type section struct {
	subscriber string   // "" for commands
	args       []string // the subscriber's command
	commands   []string // commands: typed lines
	want       []string // expected output (after confirmed, for subscribers)
	confirm    []string // subscribers: output before "--- confirmed"
}

func loadTranscripts(dir string) ([]*transcript, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	var out []*transcript
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		t, err := parseTranscript(filepath.Base(f), string(b))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no transcripts in %s", dir)
	}
	return out, nil
}

func parseTranscript(name, text string) (*transcript, error) {
	t := &transcript{name: name}
	var cur *section
	for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# modes:"):
			t.modes = strings.Fields(strings.TrimPrefix(line, "# modes:"))
		case strings.HasPrefix(line, "#"):
		case line == "=== commands":
			t.sections = append(t.sections, section{})
			cur = &t.sections[len(t.sections)-1]
		case strings.HasPrefix(line, "=== subscribe "):
			head, args, ok := strings.Cut(strings.TrimPrefix(line, "=== subscribe "), ":")
			if !ok {
				return nil, fmt.Errorf("%s:%d: want \"=== subscribe NAME: ARGS\"", name, i+1)
			}
			t.sections = append(t.sections, section{subscriber: strings.TrimSpace(head), args: strings.Fields(args)})
			cur = &t.sections[len(t.sections)-1]
		case cur == nil:
			return nil, fmt.Errorf("%s:%d: text before the first section", name, i+1)
		case cur.subscriber != "" && line == "--- confirmed":
			cur.confirm, cur.want = cur.want, nil
		case cur.subscriber == "" && strings.HasPrefix(line, "> "):
			cur.commands = append(cur.commands, strings.TrimPrefix(line, "> "))
		default:
			cur.want = append(cur.want, line)
		}
	}
	if len(t.modes) == 0 {
		return nil, fmt.Errorf("%s: no \"# modes:\" line", name)
	}
	return t, nil
}

// cliTarget is where a transcript's redis-cli connects.
type cliTarget struct {
	addr      string
	cluster   bool // redis-cli -c
	leader    string
	prefix    string
	redisCLI  string
	sentinels []string // sentinel mode: ask these for the master first
	user      string   // the cell's ACL user (--user, --pass)
	pass      string
}

// runCLI runs every transcript that lists mode against the target.
func runCLI(ctx context.Context, ts []*transcript, mode string, tg cliTarget, log io.Writer) error {
	if mode == "sentinel" {
		// As a Sentinel client does: ask a Sentinel for the master, then
		// talk to it. The Sentinel transcript itself runs on the Sentinel.
		master, err := sentinelMaster(ctx, tg)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "Sentinel %s names master %s\n", tg.sentinels[0], master)
		tg.addr = master
	}
	ran := 0
	for _, t := range ts {
		if !slices.Contains(t.modes, mode) {
			continue
		}
		target := tg
		if t.name == "sentinel.txt" {
			target.addr = tg.sentinels[0]
		}
		fmt.Fprintf(log, "=== %s against %s\n", t.name, target.addr)
		if err := target.run(ctx, t, log); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		ran++
	}
	if ran == 0 {
		return fmt.Errorf("no transcript runs in mode %s", mode)
	}
	return nil
}

func sentinelMaster(ctx context.Context, tg cliTarget) (string, error) {
	h, p, _ := net.SplitHostPort(tg.sentinels[0])
	args := append([]string{"-h", h, "-p", p}, tg.authArgs()...)
	args = append(args, "SENTINEL", "get-master-addr-by-name", "mymaster")
	out, err := exec.CommandContext(ctx, tg.redisCLI, args...).Output()
	if err != nil {
		return "", fmt.Errorf("redis-cli SENTINEL get-master-addr-by-name: %w", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return "", fmt.Errorf("SENTINEL get-master-addr-by-name printed %q", out)
	}
	return net.JoinHostPort(f[0], f[1]), nil
}

func (tg cliTarget) expand(s string) string {
	ip, port, _ := net.SplitHostPort(tg.leader)
	return strings.NewReplacer("${P}", tg.prefix, "${LEADER_IP}", ip, "${LEADER_PORT}", port).Replace(s)
}

func (tg cliTarget) expandAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = tg.expand(s)
	}
	return out
}

func (tg cliTarget) baseArgs() []string {
	h, p, _ := net.SplitHostPort(tg.addr)
	args := append([]string{"-h", h, "-p", p, "--no-raw"}, tg.authArgs()...)
	if tg.cluster {
		args = append(args, "-c")
	}
	return args
}

// authArgs logs redis-cli in as the cell's user (without the warning
// redis-cli prints about a password on its command line).
func (tg cliTarget) authArgs() []string {
	if tg.user == "" {
		return nil
	}
	return []string{"--user", tg.user, "--pass", tg.pass, "--no-auth-warning"}
}

func (tg cliTarget) run(ctx context.Context, t *transcript, log io.Writer) error {
	var subs []*subscriber
	defer func() {
		for _, s := range subs {
			s.stop()
		}
	}()
	for _, sec := range t.sections {
		if sec.subscriber != "" {
			s, err := tg.subscribe(ctx, sec, log)
			if err != nil {
				return err
			}
			subs = append(subs, s)
			continue
		}
		cmds := tg.expandAll(sec.commands)
		cmd := exec.CommandContext(ctx, tg.redisCLI, tg.baseArgs()...)
		cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
		out, err := cmd.CombinedOutput()
		fmt.Fprintf(log, "--- %d commands; redis-cli printed:\n%s", len(cmds), out)
		if err != nil {
			return fmt.Errorf("redis-cli: %w", err)
		}
		if d := diffLines(tg.expandAll(sec.want), splitLines(string(out))); d != "" {
			return fmt.Errorf("redis-cli output differs from the transcript:\n%s", d)
		}
	}
	for _, s := range subs {
		if err := s.finish(5 * time.Second); err != nil {
			return err
		}
	}
	return nil
}

// subscriber is a background redis-cli in subscribed mode.
type subscriber struct {
	name string
	want []string
	cmd  *exec.Cmd
	mu   sync.Mutex
	got  []string
	more chan struct{}
	done chan struct{}
	log  io.Writer
	once sync.Once
}

func (tg cliTarget) subscribe(ctx context.Context, sec section, log io.Writer) (*subscriber, error) {
	args := append(tg.baseArgs(), tg.expandAll(sec.args)...)
	cmd := exec.CommandContext(ctx, tg.redisCLI, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	s := &subscriber{name: sec.subscriber, want: tg.expandAll(append(append([]string{}, sec.confirm...), sec.want...)),
		cmd: cmd, more: make(chan struct{}, 1), done: make(chan struct{}), log: log}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.mu.Lock()
			s.got = append(s.got, sc.Text())
			s.mu.Unlock()
			select {
			case s.more <- struct{}{}:
			default:
			}
		}
	}()
	if err := s.waitLines(len(sec.confirm), 5*time.Second); err != nil {
		return nil, fmt.Errorf("subscriber %s (%s) not confirmed: %w", s.name, strings.Join(sec.args, " "), err)
	}
	return s, nil
}

// waitLines waits until n lines arrived and they match the start of want.
func (s *subscriber) waitLines(n int, limit time.Duration) error {
	deadline := time.After(limit)
	for {
		s.mu.Lock()
		got := slices.Clone(s.got)
		s.mu.Unlock()
		if len(got) >= n {
			if d := diffLines(s.want[:n], got[:n]); d != "" {
				return fmt.Errorf("subscriber output differs:\n%s", d)
			}
			return nil
		}
		select {
		case <-s.more:
		case <-s.done:
			return fmt.Errorf("redis-cli exited after %d of %d lines: %q", len(got), n, got)
		case <-deadline:
			return fmt.Errorf("%d of %d lines after %v: %q", len(got), n, limit, got)
		}
	}
}

// finish waits for the rest of the expected lines, stops redis-cli and
// compares everything it printed.
func (s *subscriber) finish(limit time.Duration) error {
	err := s.waitLines(len(s.want), limit)
	s.stop()
	s.mu.Lock()
	got := slices.Clone(s.got)
	s.mu.Unlock()
	fmt.Fprintf(s.log, "--- subscriber %s printed:\n%s\n", s.name, strings.Join(got, "\n"))
	if d := diffLines(s.want, got); d != "" {
		return fmt.Errorf("subscriber %s: output differs from the transcript:\n%s", s.name, d)
	}
	return err
}

func (s *subscriber) stop() {
	s.once.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(2 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
		s.cmd.Wait()
	})
}

func splitLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// diffLines compares two outputs line by line, ignoring trailing spaces
// (Redis ends some error texts with one); "" if they are equal.
func diffLines(want, got []string) string {
	norm := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = strings.TrimRight(s, " \r")
		}
		return out
	}
	w, g := norm(want), norm(got)
	if slices.Equal(w, g) {
		return ""
	}
	first := 0
	for first < len(w) && first < len(g) && w[first] == g[first] {
		first++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  (%d lines expected, %d printed; from line %d)\n", len(w), len(g), first+1)
	for i := max(first-2, 0); i < min(max(len(w), len(g)), first+6); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		mark := " "
		if wl != gl || i >= len(w) || i >= len(g) {
			mark = "!"
		}
		fmt.Fprintf(&b, "%s line %d\n    want %q\n    got  %q\n", mark, i+1, wl, gl)
	}
	return b.String()
}
