package fsm

import (
	"strconv"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// The lock and unlock scripts of a Redisson-style reentrant lock, as a
// client sends them (written for these benchmarks).
const (
	benchLock = `if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`
	benchUnlock = `if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if n > 0 then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`
)

func BenchmarkApplySet(b *testing.B) { benchApplySet(b, New(Options{})) }

func benchApplySet(b *testing.B, f *FSM) {
	defer f.Close()
	cmd := Command{Args: toArgs([]string{"SET", "k", "v", "PX", "30000"})}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f.Apply(int64(i), cmd)
	}
}

func BenchmarkReadGet(b *testing.B) {
	f := New(Options{})
	defer f.Close()
	f.Apply(0, Command{Args: toArgs([]string{"SET", "k", "v"})})
	cmd := Command{Args: toArgs([]string{"GET", "k"})}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f.Read(int64(i), cmd)
	}
}

// BenchmarkEvalLockUnlock applies the lock script then the unlock script
// (EVALSHA, as Redisson 3.46+ sends them): one lock+unlock pair per op.
func BenchmarkEvalLockUnlock(b *testing.B) { benchEvalLockUnlock(b, New(Options{})) }

func benchEvalLockUnlock(b *testing.B, f *FSM) {
	defer f.Close()
	lockSHA := f.Apply(0, Command{Args: toArgs([]string{"SCRIPT", "LOAD", benchLock})}).Reply.String()
	unlockSHA := f.Apply(0, Command{Args: toArgs([]string{"SCRIPT", "LOAD", benchUnlock})}).Reply.String()
	lock := Command{Args: toArgs([]string{"EVALSHA", lockSHA, "1", "{lock}", "30000", "uuid:1"})}
	unlock := Command{Args: toArgs([]string{"EVALSHA", unlockSHA, "2", "{lock}", "redisson_lock__channel:{lock}", "0", "30000", "uuid:1"})}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if r := f.Apply(int64(i), lock); r.Reply.Type != 0 {
			b.Fatalf("lock: %q", r.Reply.Append(nil))
		}
		if r := f.Apply(int64(i), unlock); r.Reply.Int != 1 {
			b.Fatalf("unlock: %q", r.Reply.Append(nil))
		}
	}
}

func BenchmarkSnapshot10k(b *testing.B) {
	f := New(Options{})
	defer f.Close()
	for i := 0; i < 10000; i++ {
		f.Apply(0, Command{Args: toArgs([]string{"HSET", "lock:" + strconv.Itoa(i), "uuid:1", "1"})})
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := f.Snapshot(discard{}); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkScan100k is one SCAN call (COUNT 10) of full iterations over a
// database of 100,000 keys, while a lock key comes and goes between calls.
func BenchmarkScan100k(b *testing.B) {
	f := New(Options{})
	defer f.Close()
	for i := 0; i < 100000; i++ {
		f.Apply(0, Command{Args: toArgs([]string{"SET", "key:" + strconv.Itoa(i), "v"})})
	}
	set := Command{Args: toArgs([]string{"HSET", "lock", "uuid:1", "1"})}
	del := Command{Args: toArgs([]string{"DEL", "lock"})}
	cursor := "0"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f.Apply(0, set)
		r := f.Read(0, Command{Args: toArgs([]string{"SCAN", cursor, "COUNT", "10"})})
		if len(r.Reply.Elems) != 2 {
			b.Fatalf("SCAN: %q", r.Reply.Append(nil))
		}
		cursor = string(r.Reply.Elems[0].Str)
		f.Apply(0, del)
	}
}

// BenchmarkStringLockUnlock is the string lock of redsync, redislock and
// redis-py: SET NX PX to take it, a failed SET NX from a second client,
// then the compare-and-delete script to release it.
func BenchmarkStringLockUnlock(b *testing.B) {
	f := New(Options{})
	defer f.Close()
	unlockSHA := f.Apply(0, Command{Args: toArgs([]string{"SCRIPT", "LOAD",
		`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`})}).Reply.String()
	lock := Command{Args: toArgs([]string{"SET", "lock", "token-a", "NX", "PX", "8000"})}
	other := Command{Args: toArgs([]string{"SET", "lock", "token-b", "NX", "PX", "8000"})}
	unlock := Command{Args: toArgs([]string{"EVALSHA", unlockSHA, "1", "lock", "token-a"})}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if r := f.Apply(int64(i), lock); r.Reply.Type != resp.Status {
			b.Fatalf("lock: %q", r.Reply.Append(nil))
		}
		if r := f.Apply(int64(i), other); r.Reply.Type != resp.Nil {
			b.Fatalf("contended lock: %q", r.Reply.Append(nil))
		}
		if r := f.Apply(int64(i), unlock); r.Reply.Int != 1 {
			b.Fatalf("unlock: %q", r.Reply.Append(nil))
		}
	}
}

// BenchmarkIntrospect100k is one DEADBOLT LOCKS read (the default COUNT,
// 100) of a database of 100,000 plain keys and 1,000 locks of each of
// two kinds.
func BenchmarkIntrospect100k(b *testing.B) {
	benchIntrospect100k(b, "")
}

// BenchmarkIntrospect100kUser is the same read for an ACL user who may
// read only the job:1* keys (111 of the 1,000 string locks): the other
// locks are left out (lockReader).
func BenchmarkIntrospect100kUser(b *testing.B) {
	benchIntrospect100k(b, "svc")
}

func benchIntrospect100k(b *testing.B, user string) {
	f := New(Options{})
	defer f.Close()
	f.Apply(0, ACLSetUserCommand([]byte("svc"), toArgs([]string{"on", "nopass", "~job:1*", "+@all"})))
	for i := 0; i < 100000; i++ {
		f.Apply(0, Command{Args: toArgs([]string{"SET", "key:" + strconv.Itoa(i), "v"})})
	}
	for i := 0; i < 1000; i++ {
		f.Apply(0, Command{Args: toArgs([]string{"SET", "job:" + strconv.Itoa(i), "token", "NX", "PX", "30000"})})
		f.Apply(0, Command{Args: toArgs([]string{"HINCRBY", "lock:" + strconv.Itoa(i), "uuid:1", "1"})})
	}
	cmd := Command{Args: toArgs([]string{LocksCommand}), User: user}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := f.Read(0, cmd); len(r.Reply.Elems) != DefaultLocksCount {
			b.Fatalf("%d locks", len(r.Reply.Elems))
		}
	}
}

// BenchmarkFcallLockUnlock is BenchmarkEvalLockUnlock with the two scripts
// as the functions of one library, called with FCALL.
func BenchmarkFcallLockUnlock(b *testing.B) {
	benchFcallLockUnlock(b, "", "")
}

// BenchmarkFcallLockUnlockStateful is the same library with a counter of
// calls in a library-level local: a library that keeps state, whose every
// call runs its chunk again (luaexec/function_state.go).
func BenchmarkFcallLockUnlockStateful(b *testing.B) {
	benchFcallLockUnlock(b, "local calls = 0\n", "calls = calls + 1\n")
}

func benchFcallLockUnlock(b *testing.B, head, lockHead string) {
	f := New(Options{})
	defer f.Close()
	lib := "#!lua name=benchlock\n" + head +
		"local function lock(KEYS, ARGV)\n" + lockHead + benchLock + "\nend\n" +
		"local function unlock(KEYS, ARGV)\n" + benchUnlock + "\nend\n" +
		"redis.register_function('lock', lock)\nredis.register_function('unlock', unlock)\n"
	if r := f.Apply(0, Command{Args: toArgs([]string{"FUNCTION", "LOAD", lib})}); r.Reply.IsError() {
		b.Fatalf("FUNCTION LOAD: %q", r.Reply.Append(nil))
	}
	lock := Command{Args: toArgs([]string{"FCALL", "lock", "1", "{lock}", "30000", "uuid:1"})}
	unlock := Command{Args: toArgs([]string{"FCALL", "unlock", "2", "{lock}", "redisson_lock__channel:{lock}", "0", "30000", "uuid:1"})}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if r := f.Apply(int64(i), lock); r.Reply.Type != 0 {
			b.Fatalf("lock: %q", r.Reply.Append(nil))
		}
		if r := f.Apply(int64(i), unlock); r.Reply.Int != 1 {
			b.Fatalf("unlock: %q", r.Reply.Append(nil))
		}
	}
}
