// Package fsm is deadbolt's deterministic state machine: sixteen Redis
// databases, every keyspace command, key expiry, the Lua script cache and
// snapshots.
//
// Apply takes a command and the time to apply it at; given the same
// commands with the same times, every instance reaches the same state and
// gives the same replies. Read serves read-only commands without changing
// anything. Handlers live one file per command family (cmd_*.go), each
// opening with its registration table.
package fsm
