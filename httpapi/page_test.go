package httpapi

import (
	"testing"
	"time"
)

// A viewer that takes nothing is dropped once its buffer is full, and a
// push never waits for it: the others still get every push.
func TestHubDropsSlowViewer(t *testing.T) {
	h := newHub(&remote{})
	slow, _, ok := h.join()
	if !ok {
		t.Fatal("join refused")
	}
	fast, _, _ := h.join()
	got := 0
	for i := range viewerBuffer + 5 {
		done := make(chan struct{})
		go func() { h.broadcast([]byte{byte(i)}); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a push waited for a viewer")
		}
		<-fast.ch
		got++
	}
	select {
	case <-slow.gone:
	default:
		t.Fatal("the slow viewer was not dropped")
	}
	select {
	case <-fast.gone:
		t.Fatal("the viewer that kept up was dropped")
	default:
	}
	if n := h.count(); n != 1 || got != viewerBuffer+5 {
		t.Errorf("viewers left %d, pushes taken %d", n, got)
	}
	// Past the cap, a join is refused.
	for h.count() < maxViewers {
		if _, _, ok := h.join(); !ok {
			t.Fatalf("refused at %d viewers", h.count())
		}
	}
	if _, _, ok := h.join(); ok {
		t.Fatal("a join past the cap was accepted")
	}
}
