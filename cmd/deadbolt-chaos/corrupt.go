package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deadbolt/deadbolt/internal/chaos"
)

// The corrupt-file nemesis: a stopped node's real files damaged between
// its stop and its restart (cluster/raftlog/doc.go has the formats).

// damage is one way to damage a node's files.
type damage struct {
	kind string
	// must: "start" (the node repairs it and runs), "refuse" (it must not
	// start), "" (either, depending on what else the directory holds).
	must string
	// apply damages the directory and returns the file it damaged.
	apply func(dataDir string, r *rand.Rand) (string, error)
}

var damages = []damage{
	{kind: "stable-flip", must: "start", apply: func(dir string, r *rand.Rand) (string, error) {
		// One slot's checksummed bytes: the other slot holds the same state.
		p := filepath.Join(dir, "log", "stable")
		return p, flip(p, int64(r.Intn(2))*4096+8+int64(r.Intn(32)))
	}},
	{kind: "stable-truncate", must: "refuse", apply: func(dir string, r *rand.Rand) (string, error) {
		p := filepath.Join(dir, "log", "stable")
		return p, os.Truncate(p, int64(r.Intn(200)))
	}},
	{kind: "stable-remove", must: "refuse", apply: func(dir string, r *rand.Rand) (string, error) {
		p := filepath.Join(dir, "log", "stable")
		return p, os.Remove(p)
	}},
	{kind: "segment-tail-truncate", must: "start", apply: func(dir string, r *rand.Rand) (string, error) {
		// Cut inside the last record: the tail is cut and caught up.
		p, recs, err := lastSegment(dir)
		if err != nil {
			return p, err
		}
		last := recs[len(recs)-1]
		return p, os.Truncate(p, last.off+1+r.Int63n(last.size-1))
	}},
	{kind: "segment-tail-flip", must: "start", apply: func(dir string, r *rand.Rand) (string, error) {
		p, recs, err := lastSegment(dir)
		if err != nil {
			return p, err
		}
		last := recs[len(recs)-1]
		return p, flip(p, last.off+8+r.Int63n(last.size-8))
	}},
	{kind: "segment-middle-flip", apply: func(dir string, r *rand.Rand) (string, error) {
		// A record of the last segment with whole records of later
		// appends after it: it was acknowledged, so this is no torn tail.
		// Below the synced mark the log is cut there and the node catches
		// up without voting (raftlog's RepairLost), else it is refused.
		p, recs, err := lastSegment(dir)
		if err != nil {
			return p, err
		}
		if len(recs) < 200 {
			return p, errors.New("too few records for a middle")
		}
		rec := recs[len(recs)/4+r.Intn(len(recs)/2)]
		return p, flip(p, rec.off+8+r.Int63n(rec.size-8))
	}},
	{kind: "segment-earlier-flip", must: "refuse", apply: func(dir string, r *rand.Rand) (string, error) {
		// A record the log still holds in a segment before the last:
		// corruption, not a torn tail.
		segs, _ := filepath.Glob(filepath.Join(dir, "log", "*.seg"))
		sort.Strings(segs)
		floor := logFloor(dir)
		for i := len(segs) - 2; i >= 0; i-- {
			recs, err := records(segs[i])
			if err != nil {
				return segs[i], err
			}
			var held []record
			for _, rec := range recs {
				if rec.index >= floor {
					held = append(held, rec)
				}
			}
			if len(held) > 0 {
				rec := held[r.Intn(len(held))]
				return segs[i], flip(segs[i], rec.off+8+r.Int63n(rec.size-8))
			}
		}
		return "", errors.New("no earlier segment holding entries the log still serves")
	}},
	{kind: "log-meta-flip", must: "refuse", apply: func(dir string, r *rand.Rand) (string, error) {
		p := filepath.Join(dir, "log", "meta")
		st, err := os.Stat(p)
		if err != nil {
			return p, err
		}
		return p, flip(p, r.Int63n(st.Size()))
	}},
	{kind: "snapshot-state-flip", apply: func(dir string, r *rand.Rand) (string, error) {
		s, err := newestSnapshot(dir)
		if err != nil {
			return s, err
		}
		p := filepath.Join(s, "state.bin")
		st, err := os.Stat(p)
		if err != nil {
			return p, err
		}
		return p, flip(p, r.Int63n(st.Size()))
	}},
	{kind: "snapshot-state-truncate", apply: func(dir string, r *rand.Rand) (string, error) {
		s, err := newestSnapshot(dir)
		if err != nil {
			return s, err
		}
		p := filepath.Join(s, "state.bin")
		st, err := os.Stat(p)
		if err != nil {
			return p, err
		}
		return p, os.Truncate(p, r.Int63n(st.Size()))
	}},
	{kind: "snapshot-meta-index", apply: func(dir string, r *rand.Rand) (string, error) {
		// Still valid JSON, with another index: the damage a parser
		// cannot see.
		s, err := newestSnapshot(dir)
		if err != nil {
			return s, err
		}
		p := filepath.Join(s, "meta.json")
		b, err := os.ReadFile(p)
		if err != nil {
			return p, err
		}
		re := regexp.MustCompile(`"Index":\s*(\d+)`)
		m := re.FindSubmatch(b)
		if m == nil {
			return p, errors.New("no Index in meta.json")
		}
		i, _ := strconv.ParseUint(string(m[1]), 10, 64)
		b = re.ReplaceAll(b, []byte(fmt.Sprintf(`"Index":%d`, i+uint64(1+r.Intn(9)))))
		return p, os.WriteFile(p, b, 0o644)
	}},
}

func flip(path string, off int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		return err
	}
	b[0] ^= byte(1 << rand.Intn(8))
	if _, err := f.WriteAt(b, off); err != nil {
		return err
	}
	return f.Sync()
}

type record struct {
	off, size int64
	index     uint64
}

// records reads the records of a segment file (a 16-byte header, then
// records: u32 length, u32 CRC, a payload that starts with the u64 index).
func records(p string) ([]record, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var recs []record
	for off := int64(16); off+8 <= int64(len(b)); {
		n := int64(binary.LittleEndian.Uint32(b[off:]))
		if n < 8 || off+8+n > int64(len(b)) {
			break
		}
		recs = append(recs, record{off, 8 + n, binary.LittleEndian.Uint64(b[off+8:])})
		off += 8 + n
	}
	return recs, nil
}

// lastSegment reads the records of the newest segment of dir's log.
func lastSegment(dir string) (string, []record, error) {
	segs, _ := filepath.Glob(filepath.Join(dir, "log", "*.seg"))
	if len(segs) == 0 {
		return "", nil, errors.New("no segment")
	}
	sort.Strings(segs) // named by a zero-padded first index
	p := segs[len(segs)-1]
	recs, err := records(p)
	if err != nil {
		return p, nil, err
	}
	if len(recs) < 2 {
		return p, nil, errors.New("too few records in " + p)
	}
	return p, recs, nil
}

// logFloor is the first index the log's meta file records (0: none).
func logFloor(dir string) uint64 {
	b, err := os.ReadFile(filepath.Join(dir, "log", "meta"))
	if err != nil || len(b) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// newestSnapshot is the directory of dir's snapshot of the highest index.
func newestSnapshot(dir string) (string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		return "", err
	}
	best, bestIndex := "", uint64(0)
	for _, e := range ents {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		p := filepath.Join(dir, "snapshots", e.Name())
		b, err := os.ReadFile(filepath.Join(p, "meta.json"))
		if err != nil {
			continue
		}
		var m struct{ Index uint64 }
		if json.Unmarshal(b, &m) == nil && m.Index >= bestIndex {
			best, bestIndex = p, m.Index
		}
	}
	if best == "" {
		return "", errors.New("no snapshot")
	}
	return best, nil
}

// corruptFile stops a node, damages one of its files and starts it again.
func (h *harness) corruptFile(ctx context.Context) (string, error) {
	var n *node
	for _, c := range h.pick(h.db.nodes, len(h.db.nodes)) {
		if c.usable() && !onOlder(c) { // this build's file checks, not the older one's
			n = c
			break
		}
	}
	if n == nil {
		return "", errors.New("no running node on this build")
	}
	r := h.rng()
	sig, how := syscall.SIGKILL, "SIGKILL"
	if r.Intn(3) == 0 {
		sig, how = syscall.SIGTERM, "SIGTERM"
	}
	n.kill(sig)
	// The damages this directory allows, tried in random order.
	var dm damage
	var file string
	var tried []string
	for _, i := range r.Perm(len(damages)) {
		c := damages[i]
		f, err := c.apply(n.dataDir, r)
		if err == nil {
			dm, file = c, f
			break
		}
		tried = append(tried, c.kind+": "+err.Error())
	}
	if dm.kind == "" {
		return fmt.Sprintf("stopped %s (%s); nothing to damage (%s); restarted", n.id, how, strings.Join(tried, "; ")), h.db.start(n, "")
	}
	h.disk.setExpect(n, "its "+file+" was damaged (corrupt-file)")
	if err := h.db.start(n, ""); err != nil {
		return "", err
	}
	outcome, code, out := waitStartedOrExited(ctx, n, 20*time.Second)
	rel, _ := filepath.Rel(n.dataDir, file)
	detail := fmt.Sprintf("stopped %s (%s), %s %s, restarted: %s", n.id, how, dm.kind, rel, outcome)
	h.disk.mu.Lock()
	h.disk.outcomes[dm.kind+" "+outcome]++
	h.disk.mu.Unlock()
	switch outcome {
	case "refused":
		h.disk.mu.Lock()
		h.disk.refused[n] = rel
		h.disk.mu.Unlock()
		line := strings.ReplaceAll(failLine(out, file), n.dataDir+"/", "")
		detail += fmt.Sprintf(" (exit %d: %s)", code, trim(line, 200))
		if code != 1 || !strings.Contains(out, file) {
			h.violation(chaos.Violation{Check: "corrupt-file", Detail: fmt.Sprintf("%s refused to start after %s of %s with exit %d and no message naming the file (see %s)", n.id, dm.kind, file, code, n.logf)})
		}
		if dm.must == "start" {
			h.violation(chaos.Violation{Check: "corrupt-file", Detail: fmt.Sprintf("%s refused to start after %s of %s, which it repairs by itself (see %s)", n.id, dm.kind, file, n.logf)})
		}
	case "started":
		if dm.must == "refuse" {
			h.violation(chaos.Violation{Check: "corrupt-file", Detail: fmt.Sprintf("%s started over %s of %s, which must be refused", n.id, dm.kind, file)})
		}
		h.disk.setExpect(n, "")
	default:
		h.violation(chaos.Violation{Check: "corrupt-file", Detail: fmt.Sprintf("%s neither served nor exited within 20 s of its restart after %s of %s (see %s)", n.id, dm.kind, file, n.logf)})
	}
	return detail, nil
}

// waitStartedOrExited waits until n answers PING ("started") or its
// process exits ("refused", with its exit code and log since its start).
func waitStartedOrExited(ctx context.Context, n *node, limit time.Duration) (string, int, string) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return "refused", -1, lastStart(n.logf)
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-done:
			return "refused", cmd.ProcessState.ExitCode(), lastStart(n.logf)
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := n.do(ctx, 500*time.Millisecond, "PING"); err == nil {
			return "started", 0, ""
		}
	}
	return "hung", -1, lastStart(n.logf)
}
