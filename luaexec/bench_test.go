package luaexec

import (
	"strconv"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

// lockScript is a Redisson-style lock acquisition: a few redis.call and
// tonumber, the hot path of a lock server.
const lockScript = `
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
end;
return redis.call('pttl', KEYS[1]);
`

// unlockScript is a Redisson-style unlock with the unlock latch.
const unlockScript = `
local val = redis.call('get', KEYS[3]);
if val ~= false then
    return tonumber(val);
end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
local result = 0;
if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    result = 0;
else
    redis.call('del', KEYS[1]);
    redis.call(ARGV[4], KEYS[2], ARGV[1]);
    result = 1;
end;
redis.call('set', KEYS[3], result, 'px', ARGV[5]);
return result;
`

// trivialCaller answers every command with a fixed reply.
type trivialCaller struct{}

func (trivialCaller) Call(args [][]byte) resp.Reply {
	switch string(args[0]) {
	case "exists", "hexists", "del":
		return resp.Zero
	case "hincrby", "pexpire":
		return resp.One
	case "pttl":
		return resp.IntReply(30000)
	case "get":
		return resp.NilReply
	}
	return resp.OK
}

func benchRun(b *testing.B, script string, keys, argv [][]byte) {
	e := New(Options{})
	defer e.Close()
	sha := SHA1Hex([]byte(script))
	if r := e.Compile(sha, []byte(script)); r.Type == resp.Error {
		b.Fatal(r.String())
	}
	c := trivialCaller{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := e.Run(sha, nil, keys, argv, c)
		if r.Type == resp.Error {
			b.Fatal(r.String())
		}
	}
}

func BenchmarkRunLock(b *testing.B) {
	benchRun(b, lockScript,
		[][]byte{[]byte("{lock}")},
		[][]byte{[]byte("30000"), []byte("8743c9c0-0795-4907-87fd-6c719a6b4586:1")})
}

func BenchmarkRunUnlock(b *testing.B) {
	benchRun(b, unlockScript,
		[][]byte{[]byte("{lock}"), []byte("redisson_lock__channel:{lock}"), []byte("redisson_unlock_latch:{lock}:abc")},
		[][]byte{[]byte("0"), []byte("30000"), []byte("8743c9c0:1"), []byte("PUBLISH"), []byte("13500")})
}

// benchRunClients runs a script for 64 clients in turn, each with its own
// keys and arguments (a lock name and an owner id), as a lock server sees
// them: strings do not repeat from one run to the next.
func benchRunClients(b *testing.B, script string, args func(client string) (keys, argv [][]byte)) {
	e := New(Options{})
	defer e.Close()
	sha := SHA1Hex([]byte(script))
	if r := e.Compile(sha, []byte(script)); r.Type == resp.Error {
		b.Fatal(r.String())
	}
	var keys, argv [64][][]byte
	for i := range keys {
		keys[i], argv[i] = args(strconv.Itoa(i))
	}
	c := trivialCaller{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := e.Run(sha, nil, keys[i%64], argv[i%64], c)
		if r.Type == resp.Error {
			b.Fatal(r.String())
		}
	}
}

func BenchmarkRunLockClients(b *testing.B) {
	benchRunClients(b, lockScript, func(c string) (keys, argv [][]byte) {
		return [][]byte{[]byte("lock:" + c)},
			[][]byte{[]byte("30000"), []byte("8743c9c0-0795-4907-87fd-6c719a6b4586:" + c)}
	})
}

func BenchmarkRunUnlockClients(b *testing.B) {
	benchRunClients(b, unlockScript, func(c string) (keys, argv [][]byte) {
		return [][]byte{[]byte("lock:" + c), []byte("redisson_lock__channel:{lock:" + c + "}"), []byte("redisson_unlock_latch:{lock:" + c + "}:abc")},
			[][]byte{[]byte("0"), []byte("30000"), []byte("8743c9c0:" + c), []byte("PUBLISH"), []byte("13500")}
	})
}

func BenchmarkLoop(b *testing.B) {
	benchRun(b, `local n = 0 for i = 1, 10000 do n = n + i end return n`, nil, nil)
}

func BenchmarkTableAppend(b *testing.B) {
	benchRun(b, `local t = {} for i = 1, 1000 do t[#t+1] = tostring(i) .. 'x' end return #t`, nil, nil)
}

func BenchmarkCompile(b *testing.B) {
	e := New(Options{})
	defer e.Close()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.Forget()
		if r := e.Compile("", []byte(unlockScript+"--"+strconv.Itoa(i))); r.Type == resp.Error {
			b.Fatal(r.String())
		}
	}
}
