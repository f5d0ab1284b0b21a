package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// hashicorp/raft v1.7.3 can wedge a leader's replication to one follower
// for good. When a follower answers a pipelined AppendEntries
// unsuccessfully (its disk full, a log that does not match, a node
// catching up), raft's decoder (pipelineDecode) returns and reads the
// pipeline's Consumer() no more, while its sender may still pick one more
// send before it sees that (a select between the decoder's end and more
// work). The net transport's pipeline, with raft's default of two RPCs in
// flight, has unbuffered channels: its reader blocks handing the answer to
// nobody, so that send blocks handing over its future, inside the sender,
// which alone would close the pipeline. The follower gets heartbeats but no
// entry again while that node leads, and raft's shutdown (Node.Close)
// waits for the sender forever. (Seen in the deadbolt tests as a Close that
// hung after a follower refused an append; grafana/pyroscope#5518 reports
// the same deadlock and turns pipelining off.)
//
// pipelineConsumer keeps pipelining and takes the answers off the
// transport's pipeline as they come, queueing them for raft in order, so
// the transport never waits for raft's decoder. The wire still holds at
// most what the transport allows in flight (its reader decodes one answer
// at a time); only answers nobody reads pile up, and only until raft's
// sender closes the pipeline, which it now reaches.
type pipelineConsumer struct {
	out  chan raft.AppendFuture
	stop chan struct{}
	once sync.Once
}

func newPipelineConsumer(in <-chan raft.AppendFuture) *pipelineConsumer {
	c := &pipelineConsumer{out: make(chan raft.AppendFuture), stop: make(chan struct{})}
	go c.run(in)
	return c
}

func (c *pipelineConsumer) run(in <-chan raft.AppendFuture) {
	var queue []raft.AppendFuture
	for {
		var out chan raft.AppendFuture
		var next raft.AppendFuture
		if len(queue) > 0 {
			out, next = c.out, queue[0]
		}
		select {
		case f := <-in:
			queue = append(queue, f)
		case out <- next:
			queue[0] = nil
			queue = queue[1:]
		case <-c.stop:
			return
		}
	}
}

func (c *pipelineConsumer) close() { c.once.Do(func() { close(c.stop) }) }
