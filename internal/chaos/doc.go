// Package chaos holds the checkers of the fault-injection harness
// (cmd/deadbolt-chaos): the operation history and how an error becomes an
// outcome, porcupine models of a register and a list, the mutual exclusion
// and lost-lock checks of the lock workload, the convergence check that
// replays every node's Raft log and snapshots, and the scan of node logs.
// Everything here works on recorded data, so each check has unit tests with
// histories built by hand.
package chaos
