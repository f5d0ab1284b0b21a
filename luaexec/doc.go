// Package luaexec runs Redis Lua scripts (EVAL, EVALSHA, SCRIPT LOAD) the
// way Redis 7.0 does, deterministically, so that every replica of a
// replicated state machine computes the same result.
//
// It runs on gopher-lua's virtual machine and compiler, with its own Lua
// 5.1 parser and its own Lua 5.1 libraries in front of them, so that what a
// script sees matches Redis 7.0.15 as closely as possible: the same
// globals (read-only), the same libraries (string, table, math, coroutine,
// cjson, bit, struct, cmsgpack, redis), the same conversions between Lua
// values and replies, the same number formatting, and the same error
// texts, including syntax errors and "script: <sha>, on @user_script:N.".
// The tests compare scripts with a real redis-server when one is
// installed.
//
// Determinism:
//   - Work is counted, never timed: compilation instruments the script so
//     that loops, function calls, string building and library functions
//     charge a budget (see instrument.go). An endless or runaway script
//     fails with the same error after the same amount of work everywhere.
//   - math.random is Redis's rand48 generator; like Redis 7.0, it is not
//     reseeded between scripts, so its state (and cjson's settings, which
//     also outlive a script) belongs to the state machine: see
//     Engine.State and Engine.SetState.
//   - Addresses ("table: 0x...") are made-up, numbered per run, and pairs
//     visits tables in the order Lua 5.1's tables would.
//   - A function (FCALL) cannot change what a later call sees: one that
//     could (a library-level local it assigns, a table it could fill) runs
//     each call in a fresh copy of its library, so a node that loaded the
//     library again (a restart, a snapshot) answers as the others do
//     (function_state.go).
//
// Speed: a lock server runs the same few scripts over and over, so a run
// of a cached script allocates nothing in the common case. Each script
// keeps its KEYS and ARGV tables from run to run while no run changed them
// beyond their values, recent argument strings are kept boxed in a small
// cache, redis.call builds its command in one reused buffer (see Caller),
// and a chunk reads KEYS, ARGV, redis.call and redis.pcall once into hidden
// locals rather than through the read-only environment on every use. A
// function (FCALL) gets the same two tables refilled when its code shows it
// cannot keep them, and reads redis.call and redis.pcall through hidden
// upvalues of its library (DESIGN.md). None of this is visible to scripts,
// nor to the work budget.
//
// The package knows nothing about commands: the Caller a script runs with
// executes redis.call and must enforce what Redis enforces for scripts
// (commands not allowed in scripts, writes from read-only scripts, ...).
//
// An Engine is not safe for concurrent use.
package luaexec
