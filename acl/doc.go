// Package acl is Redis 7.0's access control lists: users, their
// passwords (kept only as SHA-256), and the selectors that say which
// commands, keys and channels a user may use; the rules of ACL SETUSER
// and of an ACL file, in Redis's syntax and with its error texts; the
// description ACL LIST and ACL GETUSER give back; the check made before
// a command runs; and, for a command that shows keys it was not given
// (DEADBOLT LOCKS), which keys a user may read with it (User.KeyReader).
//
// Everything here is deterministic and does no I/O: the state machine
// applies ACL changes from the log with it, so that every node enforces
// the same rules from the same log index.
//
// The command table (redis_commands.txt, Redis 7.0.15's COMMAND INFO, and
// deadbolt_commands.txt, deadbolt's own commands) gives each command and
// subcommand an id, its categories and its key specs.
package acl
