package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// --http-addr serves /healthz and /metrics beside the RESP port; an
// address it cannot listen on stops the start with a message naming the
// flag.
func TestRunHTTPAddr(t *testing.T) {
	addr, httpAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out, errb bytes.Buffer
	go func() { done <- run(ctx, []string{"--addr", addr, "--http-addr", httpAddr}, &out, &errb) }()
	dialWhenUp(t, httpAddr).Close()
	for path, want := range map[string]string{"/healthz": "ok\n", "/metrics": "deadbolt_connections "} {
		r, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d, body lacks %q", path, r.StatusCode, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = run(ctx, []string{"--addr", freeAddr(t), "--http-addr", ln.Addr().String()}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "http-addr") {
		t.Errorf("--http-addr on a port in use: %v", err)
	}
}
