// Package httpapi is a node's HTTP endpoint for operators (--http-addr):
// /metrics in the Prometheus text format, /healthz and /readyz, and a
// live status page at / (members, a timeline of leader and membership
// changes, the locks held and waited on) with its JSON API, /api/status
// and /api/locks.
//
// Nothing here is on the command path. The series are read at scrape time
// from counters the server, the Raft node and the log store keep anyway
// (a prometheus.Collector, collector.go), so a node with the endpoint on
// serves commands exactly as one without it. The HTTP server is bounded:
// header, read, write and idle timeouts, a small header limit, GET and
// HEAD only, and few scrapes at a time; a scrape that counts keys takes
// the state machine's lock at most once a second, however often it is
// asked.
package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/deadbolt/deadbolt/cluster"
	"github.com/deadbolt/deadbolt/server"
)

// Source is the node the endpoint reports on: its RESP server and either
// its Raft member or its single-node backend.
type Source struct {
	Server *server.Server
	Raft   *cluster.Node  // nil for a single node without a log
	Local  *cluster.Local // the single node's backend; nil in a cluster
}

// Config configures the endpoint.
type Config struct {
	Addr   string // host:port; port 0 picks a free one
	Logger *slog.Logger
}

// Limits on HTTP clients: none of them can hold more than a goroutine and
// a few kilobytes for long.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 8 << 10
	maxScrapes        = 4 // concurrent /metrics requests; more get 503
	scrapeTimeout     = 20 * time.Second
)

// Endpoint is a running HTTP endpoint.
type Endpoint struct {
	src  Source
	ln   net.Listener
	hs   *http.Server
	reg  *prometheus.Registry
	done chan error

	// The status page (page.go, status.go).
	remote    *remote
	hub       *hub
	apiSem    chan struct{}
	cancelHub context.CancelFunc
}

// Start listens on cfg.Addr and serves until Close.
func Start(cfg Config, src Source) (*Endpoint, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e := &Endpoint{src: src, reg: prometheus.NewRegistry(), done: make(chan error, 1),
		remote: &remote{src: src}, apiSem: make(chan struct{}, maxAPIRequests)}
	e.hub = newHub(e.remote)
	nc := newCollector(src)
	e.reg.MustRegister(
		nc,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	for _, c := range lockCollectors(src, nc.fsmSummary) {
		e.reg.MustRegister(c)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		MaxRequestsInFlight: maxScrapes,
		// A series that cannot be encoded is left out and logged; the
		// others are still served.
		ErrorHandling: promhttp.ContinueOnError,
		Timeout:       scrapeTimeout,
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		text(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("/readyz", e.readyz)
	mux.HandleFunc("/events", e.events)
	mux.HandleFunc("/api/status", e.apiStatus)
	mux.HandleFunc("/api/locks", e.apiLocks)
	mux.Handle("/", pageHandler())
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	e.ln = ln
	e.hs = &http.Server{
		Handler:           onlyGet(mux),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancelHub = cancel
	go e.hub.run(ctx)
	go func() { e.done <- e.hs.Serve(ln) }()
	return e, nil
}

// Addr is the address the endpoint listens on.
func (e *Endpoint) Addr() string { return e.ln.Addr().String() }

// Close stops the endpoint: requests in progress get a second to finish.
func (e *Endpoint) Close() error {
	// The page's streams end first: Shutdown waits for handlers.
	e.hub.close()
	e.cancelHub()
	defer e.remote.background.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := e.hs.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = e.hs.Close()
	}
	if serr := <-e.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// readyz answers 200 when the node can serve commands: a leader is known
// and this node has applied what it knows to be committed; 503 with the
// reason otherwise. A single node is always ready.
func (e *Endpoint) readyz(w http.ResponseWriter, _ *http.Request) {
	if e.src.Raft == nil {
		text(w, http.StatusOK, "ok")
		return
	}
	if ok, why := e.src.Raft.Ready(); !ok {
		text(w, http.StatusServiceUnavailable, why)
		return
	}
	text(w, http.StatusOK, "ok")
}

func text(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}

// onlyGet refuses every method but GET and HEAD, and request bodies.
func onlyGet(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			text(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		if r.ContentLength > 0 {
			text(w, http.StatusRequestEntityTooLarge, "no request body expected")
			return
		}
		h.ServeHTTP(w, r)
	})
}
