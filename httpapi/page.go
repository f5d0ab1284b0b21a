package httpapi

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// The status page: GET / serves the files under page/ (embedded: no
// build step, nothing from the network), which follow /events, a stream
// of server-sent events carrying the state as JSON every second and as
// soon as the leader, the term, this node's role or the timeline changes.

//go:embed page
var pageFiles embed.FS

// Bounds of the page.
const (
	maxViewers     = 64                     // concurrent /events streams; more get 503
	viewerBuffer   = 8                      // pushes a viewer may have unsent before it is dropped
	viewerWrite    = 5 * time.Second        // one push's write; a viewer that cannot take it is dropped
	pushEvery      = time.Second            // a push at least this often
	watchEvery     = 100 * time.Millisecond // how often the loop looks for a change
	maxAPIRequests = 4                      // concurrent /api/status and /api/locks; more get 503
	maxMatchLen    = 1024                   // /api/locks?match=, as Redis bounds patterns
	maxLocksCount  = 10000                  // /api/locks?count=
)

// viewer is one /events stream.
type viewer struct {
	ch   chan []byte   // pushes not yet written
	gone chan struct{} // closed when the hub drops the viewer
}

// hub computes the state once per push and hands the same bytes to every
// viewer without waiting for any: a viewer whose buffer is full is
// dropped (its browser reconnects).
type hub struct {
	remote *remote

	mu      sync.Mutex
	viewers map[*viewer]struct{}
	closed  bool
	last    []byte // the last push, for a viewer that joins
	joined  chan struct{}

	stop chan struct{}
	done chan struct{}
}

func newHub(r *remote) *hub {
	return &hub{remote: r, viewers: make(map[*viewer]struct{}), joined: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
}

// join adds a viewer, or reports false at the cap.
func (h *hub) join() (*viewer, []byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(h.viewers) >= maxViewers {
		return nil, nil, false
	}
	v := &viewer{ch: make(chan []byte, viewerBuffer), gone: make(chan struct{})}
	h.viewers[v] = struct{}{}
	if h.last == nil {
		select { // the first viewer: a state at once
		case h.joined <- struct{}{}:
		default:
		}
	}
	return v, h.last, true
}

func (h *hub) leave(v *viewer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(v)
}

func (h *hub) dropLocked(v *viewer) {
	if _, ok := h.viewers[v]; ok {
		delete(h.viewers, v)
		close(v.gone)
	}
}

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.viewers)
}

// run pushes the state while there are viewers.
func (h *hub) run(ctx context.Context) {
	defer close(h.done)
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	var (
		lastPush, lastRefresh time.Time
		lastMark              changeMark
	)
	for {
		fresh := false
		select {
		case <-h.stop:
			return
		case <-h.joined:
			fresh = true
		case <-t.C:
		}
		if h.count() == 0 {
			continue
		}
		m := h.remote.mark()
		if fresh || m != lastMark || time.Since(lastRefresh) >= pushEvery {
			h.remote.refresh(ctx) // the answers serve the pushes that follow
			lastRefresh = time.Now()
		}
		if !fresh && m == lastMark && time.Since(lastPush) < pushEvery {
			continue
		}
		lastMark, lastPush = m, time.Now()
		b, err := json.Marshal(h.remote.build())
		if err != nil {
			continue
		}
		h.broadcast(b)
	}
}

func (h *hub) broadcast(b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = b
	for v := range h.viewers {
		select {
		case v.ch <- b:
		default:
			h.dropLocked(v) // slow: it has not taken the last pushes
		}
	}
}

// close drops every viewer and stops the loop.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	for v := range h.viewers {
		h.dropLocked(v)
	}
	h.mu.Unlock()
	close(h.stop)
	<-h.done
}

// events serves one /events stream.
func (e *Endpoint) events(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead { // no stream, and no viewer's place
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		return
	}
	v, last, ok := e.hub.join()
	if !ok {
		text(w, http.StatusServiceUnavailable, "too many viewers (at most "+strconv.Itoa(maxViewers)+")")
		return
	}
	defer e.hub.leave(v)
	rc := http.NewResponseController(w)
	// The stream outlives the server's read and write timeouts: each push
	// has a deadline of its own instead.
	rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(viewerWrite)); err != nil {
			return false
		}
		if _, err := w.Write([]byte("retry: 1000\ndata: ")); err != nil {
			return false
		}
		if _, err := w.Write(b); err != nil {
			return false
		}
		if _, err := w.Write([]byte("\n\n")); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if last != nil && !write(last) {
		return
	}
	if last == nil && !write([]byte("{}")) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-v.gone:
			return
		case b := <-v.ch:
			if !write(b) {
				return
			}
		}
	}
}

// apiSlot takes one of the API's concurrent slots, or answers 503.
func (e *Endpoint) apiSlot(w http.ResponseWriter) (release func(), ok bool) {
	select {
	case e.apiSem <- struct{}{}:
		return func() { <-e.apiSem }, true
	default:
		jsonError(w, http.StatusServiceUnavailable, "ERR too many API requests at once")
		return nil, false
	}
}

// apiStatus answers GET /api/status: the page's state, with the other
// members' statuses and the lock list fetched for this request.
func (e *Endpoint) apiStatus(w http.ResponseWriter, r *http.Request) {
	release, ok := e.apiSlot(w)
	if !ok {
		return
	}
	defer release()
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil || r.URL.RawQuery != "" {
		jsonError(w, http.StatusBadRequest, "ERR /api/status takes no parameters")
		return
	}
	var wg sync.WaitGroup
	if e.remote.src.Raft != nil {
		wg.Go(func() { e.remote.fetchPeers(r.Context(), false) })
	}
	wg.Go(func() { e.remote.fetchLocks(r.Context(), false) })
	wg.Wait()
	writeJSON(w, http.StatusOK, e.remote.build())
}

// apiLocks answers GET /api/locks?match=&kind=&count= as DEADBOLT LOCKS
// MATCH KIND COUNT would, as a JSON array of objects.
func (e *Endpoint) apiLocks(w http.ResponseWriter, r *http.Request) {
	release, ok := e.apiSlot(w)
	if !ok {
		return
	}
	defer release()
	opts, msg := locksOptions(r.URL.RawQuery)
	if msg != "" {
		jsonError(w, http.StatusBadRequest, msg)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), locksTimeout)
	defer cancel()
	locks, errText := readLocks(ctx, e.src, opts)
	if errText != "" {
		code := http.StatusServiceUnavailable // no leader, a timeout
		if isBadOption(errText) {
			code = http.StatusBadRequest
		}
		jsonError(w, code, errText)
		return
	}
	writeJSON(w, http.StatusOK, locks)
}

// locksOptions turns the query into DEADBOLT LOCKS options, or an error
// message in Redis's style.
func locksOptions(raw string) ([][]byte, string) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, "ERR malformed query string"
	}
	var opts [][]byte
	for name, vals := range q {
		if len(vals) != 1 {
			return nil, "ERR parameter '" + truncate(name) + "' given more than once"
		}
		v := vals[0]
		switch name {
		case "match":
			if len(v) > maxMatchLen {
				return nil, "ERR match pattern longer than " + strconv.Itoa(maxMatchLen) + " bytes"
			}
			if v != "" {
				opts = append(opts, []byte("MATCH"), []byte(v))
			}
		case "kind":
			if v != "" {
				opts = append(opts, []byte("KIND"), []byte(v))
			}
		case "count":
			if v == "" {
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxLocksCount {
				return nil, "ERR count must be an integer from 1 to " + strconv.Itoa(maxLocksCount)
			}
			opts = append(opts, []byte("COUNT"), []byte(v))
		default:
			return nil, "ERR unknown parameter '" + truncate(name) + "' (match, kind, count)"
		}
	}
	return opts, ""
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// isBadOption tells an error about the options from one about the cluster.
func isBadOption(msg string) bool {
	for _, p := range []string{"ERR unknown lock kind", "ERR COUNT", "ERR syntax"} {
		if len(msg) >= len(p) && msg[:len(p)] == p {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		jsonError(w, http.StatusInternalServerError, "ERR "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func jsonError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// pageHandler serves the embedded files; "/" is index.html.
func pageHandler() http.Handler {
	sub, err := fs.Sub(pageFiles, "page")
	if err != nil {
		panic(err) // the files are compiled in
	}
	files := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}
