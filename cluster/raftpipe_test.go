package cluster

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// raft's decoder stops reading a pipeline's answers at the first
// unsuccessful one, and its sender may send once more before it notices
// (raftpipe.go). Over real TCP transports with raft's default of two RPCs
// in flight: a follower refuses every append, the decoder reads one answer
// and no more, the sender sends three more and closes the pipeline. Each
// send must return; with the transport's own pipeline the third blocks for
// good (and with it, in raft, that follower's replication and the node's
// shutdown).
func TestPipelineSendsWhenAnswersAreNotRead(t *testing.T) {
	a, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case rpc := <-b.Consumer():
				rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: false}, nil)
			}
		}
	}()
	tr := &durableTransport{NetworkTransport: a}
	p, err := tr.AppendEntriesPipeline("b", b.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	send := func() error {
		req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 1}
		_, err := p.AppendEntries(req, &raft.AppendEntriesResponse{})
		return err
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-p.Consumer():
		if f.Response().Success {
			t.Fatal("the refusal arrived as a success")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
	}
	// The decoder has ended; the sender goes on for a moment.
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 3; i++ {
			if err := send(); err != nil {
				done <- err
				return
			}
		}
		done <- p.Close()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a pipelined send blocked for 5 s: the transport waits to hand an answer to a decoder that stopped reading")
	}
}
