// Package cluster feeds commands to the state machine. Local drives a
// single node: it applies commands in arrival order, stamps them with the
// node's clock and proposes active expiry. The Raft-replicated driver
// will satisfy the same interface.
package cluster
