package fsm

import (
	"math/rand"
	"strconv"
	"testing"
	"time"
)

// zsetTranscript was recorded from redis-server 7.0.15.
var zsetTranscript = []ctStep{
	// ZADD options and their conflicts
	{"ZADD z 1", "-ERR wrong number of arguments for 'zadd' command"},
	{"ZADD z nx", "-ERR wrong number of arguments for 'zadd' command"},
	{"ZADD z 1 a 2", "-ERR syntax error"},
	{"ZADD z nx xx 1 a", "-ERR XX and NX options at the same time are not compatible"},
	{"ZADD z gt lt 1 a", "-ERR GT, LT, and/or NX options at the same time are not compatible"},
	{"ZADD z gt nx 1 a", "-ERR GT, LT, and/or NX options at the same time are not compatible"},
	{"ZADD z lt nx 1 a", "-ERR GT, LT, and/or NX options at the same time are not compatible"},
	{"ZADD z incr 1 a 2 b", "-ERR INCR option supports a single increment-element pair"},
	{"ZADD z incr nx xx 1 a", "-ERR XX and NX options at the same time are not compatible"},
	{"ZADD z x a", "-ERR value is not a valid float"},
	{"ZADD z nan a", "-ERR value is not a valid float"},
	{"ZADD z \" 1\" a", "-ERR value is not a valid float"},
	{"ZADD z 1e400 a", "-ERR value is not a valid float"},
	{"ZADD z xx 1 a", ":0"},
	{"EXISTS z", ":0"},
	{"ZADD z xx incr 1 a", "$-1"},
	{"EXISTS z", ":0"},
	{"ZADD z 1 a 2 b 3 c", ":3"},
	{"ZADD z ch 1 a 5 b 3 c 4 d", ":2"},
	{"ZADD z incr 1.5 a", "\"2.5\""},
	{"ZADD z nx incr 1 a", "$-1"},
	{"ZADD z nx incr 1 new", "\"1\""},
	{"ZADD z gt incr -1 a", "$-1"},
	{"ZADD z lt incr -1 a", "\"1.5\""},
	{"ZADD z gt ch 1 a 10 b", ":1"},
	{"ZADD z lt ch 1 a 10 b 20 e", ":2"},
	{"ZADD z GT 100 fresh", ":1"},
	{"ZADD z NX CH 0 a 0 fresh2", ":1"},
	{"ZADD z XX CH 7 a 7 nothere", ":1"},
	{"ZADD z INCR 0 a", "\"7\""},
	{"ZADD z CH 7 a", ":0"},
	{"ZADD z 0x10 hex +2.5 plus .5 dot 1e2 exp -inf ninf", ":5"},
	{"ZRANGE z 0 -1 WITHSCORES", "*26[\"ninf\", \"-inf\", \"fresh2\", \"0\", \"dot\", \"0.5\", \"new\", \"1\", \"plus\", \"2.5\", \"c\", \"3\", \"d\", \"4\", \"a\", \"7\", \"b\", \"10\", \"hex\", \"16\", \"e\", \"20\", \"exp\", \"100\", \"fresh\", \"100\"]"},
	{"ZADD z incr inf a", "\"inf\""},
	{"ZADD z incr -inf a", "-ERR resulting score is not a number (NaN)"},
	{"ZSCORE z a", "\"inf\""},
	{"ZINCRBY z -inf a", "-ERR resulting score is not a number (NaN)"},
	{"ZINCRBY z inf a", "\"inf\""},
	{"ZINCRBY z x a", "-ERR value is not a valid float"},
	{"ZINCRBY z nan a", "-ERR value is not a valid float"},
	{"ZINCRBY z nx a", "-ERR syntax error"},
	{"ZINCRBY z incr a", "-ERR syntax error"},
	{"ZINCRBY z xx 1", "-ERR syntax error"},
	{"ZINCRBY nz 5 a", "\"5\""},
	{"ZINCRBY z 1 nope", "\"1\""},
	{"ZINCRBY z -1 nope", "\"0\""},
	{"ZINCRBY z -1 nope", "\"-1\""},
	// scores printed as Redis 7.0 prints them (%.17g)
	{"ZADD p 0.1 a 922337203685477 b 1795342092073 c 1e20 d 1.5e-7 e -0 f 3.0 g 1e16 h 123456789012345678 i", ":9"},
	{"ZRANGE p 0 -1 WITHSCORES", "*18[\"f\", \"0\", \"e\", \"1.4999999999999999e-07\", \"a\", \"0.10000000000000001\", \"g\", \"3\", \"c\", \"1795342092073\", \"b\", \"922337203685477\", \"h\", \"10000000000000000\", \"i\", \"1.2345678901234568e+17\", \"d\", \"1e+20\"]"},
	{"ZSCORE p a", "\"0.10000000000000001\""},
	{"ZSCORE p f", "\"0\""},
	{"ZADD p INCR -0 f", "\"0\""},
	{"ZSCORE p f", "\"0\""},
	{"ZADD nz0 INCR -0 m", "\"-0\""},
	{"ZINCRBY nz1 -0 m", "\"-0\""},
	{"ZSCORE nz1 m", "\"0\""},
	{"ZINCRBY nz1 -0 m", "\"0\""},
	{"ZRANGE nz1 0 -1 WITHSCORES", "*2[\"m\", \"0\"]"},
	{"ZINCRBY p -1 b", "\"922337203685476\""},
	{"ZINCRBY p 0.2 a", "\"0.30000000000000004\""},
	{"ZMSCORE p a b nope", "*3[\"0.30000000000000004\", \"922337203685476\", $-1]"},
	{"ZMSCORE nokey a b", "*2[$-1, $-1]"},
	// Redisson fair lock: timeouts as scores, zrange 0 0 WITHSCORES
	{"ZADD {lock}:timeout 1795342092073 client1", ":1"},
	{"ZADD {lock}:timeout 1795342097073 client2", ":1"},
	{"ZRANGE {lock}:timeout 0 0 WITHSCORES", "*2[\"client1\", \"1795342092073\"]"},
	{"ZINCRBY {lock}:timeout -5000 client2", "\"1795342092073\""},
	{"ZRANGE {lock}:timeout 0 -1 WITHSCORES", "*4[\"client1\", \"1795342092073\", \"client2\", \"1795342092073\"]"},
	{"ZSCORE {lock}:timeout client1", "\"1795342092073\""},
	{"ZADD {lock}:timeout 922337203685477 client3", ":1"},
	{"ZRANGE {lock}:timeout 0 -1 WITHSCORES", "*6[\"client1\", \"1795342092073\", \"client2\", \"1795342092073\", \"client3\", \"922337203685477\"]"},
	{"ZREM {lock}:timeout client1 client2 client3 nope", ":3"},
	{"EXISTS {lock}:timeout", ":0"},
	// Redisson permit-expirable semaphore: binary members, zrangebyscore LIMIT, zcount, variadic zrem
	{"ZADD sem 1700000000000 \"\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\x09\\x0a\\x0b\\x0c\\x0d\\x0e\\x0f\\x10\" 1700000001000 \"\\xff\\xfe\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01\" 1700000002000 \"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\"", ":3"},
	{"ZRANGEBYSCORE sem 0 1700000001000 LIMIT 0 1", "*1[\"\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f\u0010\"]"},
	{"ZCOUNT sem -inf 1700000001500", ":2"},
	{"ZCOUNT sem (1700000000000 +inf", ":2"},
	{"ZREM sem \"\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\x09\\x0a\\x0b\\x0c\\x0d\\x0e\\x0f\\x10\" \"\\xff\\xfe\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01\"", ":2"},
	{"ZCARD sem", ":1"},
	// ZREM, ZCARD, ZRANK
	{"ZADD r 1 a 2 b 3 c 4 d 5 e", ":5"},
	{"ZRANK r a", ":0"},
	{"ZRANK r e", ":4"},
	{"ZREVRANK r a", ":4"},
	{"ZREVRANK r e", ":0"},
	{"ZRANK r nope", "$-1"},
	{"ZRANK nokey a", "$-1"},
	{"ZREVRANK nokey a", "$-1"},
	{"ZCARD r", ":5"},
	{"ZCARD nokey", ":0"},
	{"ZREM r a nope a", ":1"},
	{"ZREM nokey a", ":0"},
	{"ZCARD r", ":4"},
	// ZRANGE by rank
	{"ZRANGE r 0 -1", "*4[\"b\", \"c\", \"d\", \"e\"]"},
	{"ZRANGE r 1 2 WITHSCORES", "*4[\"c\", \"3\", \"d\", \"4\"]"},
	{"ZRANGE r -2 -1", "*2[\"d\", \"e\"]"},
	{"ZRANGE r -100 100", "*4[\"b\", \"c\", \"d\", \"e\"]"},
	{"ZRANGE r 3 1", "*0[]"},
	{"ZRANGE r 10 20", "*0[]"},
	{"ZRANGE r 0 -1 REV", "*4[\"e\", \"d\", \"c\", \"b\"]"},
	{"ZRANGE r 0 1 REV WITHSCORES", "*4[\"e\", \"5\", \"d\", \"4\"]"},
	{"ZRANGE r 0 -1 withscores withscores", "*8[\"b\", \"2\", \"c\", \"3\", \"d\", \"4\", \"e\", \"5\"]"},
	{"ZRANGE r x 1", "-ERR value is not an integer or out of range"},
	{"ZRANGE r 0 x", "-ERR value is not an integer or out of range"},
	{"ZRANGE r 0 -1 LIMIT 0 1", "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"},
	{"ZRANGE r 0 -1 LIMIT 0 -1", "*4[\"b\", \"c\", \"d\", \"e\"]"},
	{"ZRANGE r 0 -1 REV REV", "-ERR syntax error"},
	{"ZRANGE r 0 -1 bogus", "-ERR syntax error"},
	{"ZREVRANGE r 0 1 WITHSCORES", "*4[\"e\", \"5\", \"d\", \"4\"]"},
	{"ZREVRANGE r 0 -1 LIMIT 0 1", "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"},
	{"ZREVRANGE r 0 -1 REV", "-ERR syntax error"},
	{"ZREVRANGE r 0 -1 BYSCORE", "-ERR syntax error"},
	{"ZRANGE nokey 0 -1", "*0[]"},
	{"ZRANGE nokey a b", "-ERR value is not an integer or out of range"},
	// ZRANGE BYSCORE and the older commands
	{"ZADD y 1 a 2 b 3 c 4 d 5 e", ":5"},
	{"ZRANGE y (1 5 BYSCORE LIMIT 1 2 WITHSCORES", "*4[\"c\", \"3\", \"d\", \"4\"]"},
	{"ZRANGE y 5 (1 BYSCORE REV LIMIT 1 2", "*2[\"d\", \"c\"]"},
	{"ZRANGE y -inf +inf BYSCORE LIMIT 0 0", "*0[]"},
	{"ZRANGE y -inf +inf BYSCORE LIMIT 5 1", "*0[]"},
	{"ZRANGE y -inf +inf BYSCORE LIMIT 4 -5", "*1[\"e\"]"},
	{"ZRANGE y -inf +inf BYSCORE LIMIT -1 5", "*0[]"},
	{"ZRANGE y -inf +inf BYSCORE LIMIT 1", "-ERR syntax error"},
	{"ZRANGE y -inf +inf BYSCORE LIMIT x 1", "-ERR value is not an integer or out of range"},
	{"ZRANGE y -inf +inf BYSCORE LIMIT 1 x", "-ERR value is not an integer or out of range"},
	{"ZRANGE y 0 -1 BYSCORE BYSCORE", "-ERR syntax error"},
	{"ZRANGE y 0 -1 BYLEX BYSCORE", "-ERR syntax error"},
	{"ZRANGE y 1 0 BYSCORE", "*0[]"},
	{"ZRANGE y 3 3 BYSCORE", "*1[\"c\"]"},
	{"ZRANGE y (3 3 BYSCORE", "*0[]"},
	{"ZRANGE y 3 (3 BYSCORE", "*0[]"},
	{"ZRANGE y (2 (4 BYSCORE", "*1[\"c\"]"},
	{"ZRANGE y a 3 BYSCORE", "-ERR min or max is not a float"},
	{"ZRANGE y 0 -1 limit 0 1 limit 0 1 byscore", "*0[]"},
	{"ZRANGEBYSCORE y 0 10 REV", "-ERR syntax error"},
	{"ZRANGEBYSCORE y 0 10 BYSCORE", "-ERR syntax error"},
	{"ZRANGEBYSCORE y 0 10 LIMIT 1 1 WITHSCORES", "*2[\"b\", \"2\"]"},
	{"ZRANGEBYSCORE y 0 10 WITHSCORES LIMIT 1 2", "*4[\"b\", \"2\", \"c\", \"3\"]"},
	{"ZRANGEBYSCORE y a 10", "-ERR min or max is not a float"},
	{"ZRANGEBYSCORE y 0 b", "-ERR min or max is not a float"},
	{"ZRANGEBYSCORE y \"\" \"\"", "*0[]"},
	{"ZRANGEBYSCORE y \" 2\" \"(4\\x00zz\"", "*2[\"b\", \"c\"]"},
	{"ZRANGEBYSCORE y 1e999 -1e999", "*0[]"},
	{"ZRANGEBYSCORE y -1e999 1e999", "*5[\"a\", \"b\", \"c\", \"d\", \"e\"]"},
	{"ZRANGEBYSCORE y nan 1", "-ERR min or max is not a float"},
	{"ZRANGEBYSCORE y \"(\" 3", "*3[\"a\", \"b\", \"c\"]"},
	{"ZRANGEBYSCORE y ((1 3", "-ERR min or max is not a float"},
	{"ZRANGEBYSCORE y 0x2 0x3", "*2[\"b\", \"c\"]"},
	{"ZRANGEBYSCORE y -inf +inf LIMIT 2 -1", "*3[\"c\", \"d\", \"e\"]"},
	{"ZRANGEBYSCORE y +inf -inf", "*0[]"},
	{"ZRANGEBYSCORE y -INF +Infinity", "*5[\"a\", \"b\", \"c\", \"d\", \"e\"]"},
	{"ZREVRANGEBYSCORE y 3 1", "*3[\"c\", \"b\", \"a\"]"},
	{"ZREVRANGEBYSCORE y (3 1 WITHSCORES LIMIT 0 1", "*2[\"b\", \"2\"]"},
	{"ZREVRANGEBYSCORE y 1 3", "*0[]"},
	{"ZREVRANGEBYSCORE y +inf -inf LIMIT 1 2", "*2[\"d\", \"c\"]"},
	{"ZREVRANGEBYSCORE y +inf -inf LIMIT 4 10", "*1[\"a\"]"},
	{"ZRANGEBYSCORE nokey 0 1", "*0[]"},
	{"ZRANGEBYSCORE nokey a 1", "-ERR min or max is not a float"},
	// ZCOUNT
	{"ZCOUNT y -inf +inf", ":5"},
	{"ZCOUNT y (1 (5", ":3"},
	{"ZCOUNT y 2 2", ":1"},
	{"ZCOUNT y 3 2", ":0"},
	{"ZCOUNT y a 2", "-ERR min or max is not a float"},
	{"ZCOUNT nokey 0 1", ":0"},
	{"ZCOUNT nokey a 1", "-ERR min or max is not a float"},
	// ZRANGEBYLEX and friends (equal scores)
	{"ZADD x 0 a 0 b 0 c 0 d 0 e 0 aa 0 B", ":7"},
	{"ZRANGEBYLEX x - +", "*7[\"B\", \"a\", \"aa\", \"b\", \"c\", \"d\", \"e\"]"},
	{"ZRANGEBYLEX x - + WITHSCORES", "-ERR syntax error, WITHSCORES not supported in combination with BYLEX"},
	{"ZRANGEBYLEX x a b", "-ERR min or max not valid string range item"},
	{"ZRANGEBYLEX x [a (c", "*3[\"a\", \"aa\", \"b\"]"},
	{"ZRANGEBYLEX x (a [c", "*3[\"aa\", \"b\", \"c\"]"},
	{"ZRANGEBYLEX x + -", "*0[]"},
	{"ZRANGEBYLEX x - -", "*0[]"},
	{"ZRANGEBYLEX x + +", "*0[]"},
	{"ZRANGEBYLEX x [a [a", "*1[\"a\"]"},
	{"ZRANGEBYLEX x (a [a", "*0[]"},
	{"ZRANGEBYLEX x [ +", "*7[\"B\", \"a\", \"aa\", \"b\", \"c\", \"d\", \"e\"]"},
	{"ZRANGEBYLEX x ( +", "*7[\"B\", \"a\", \"aa\", \"b\", \"c\", \"d\", \"e\"]"},
	{"ZRANGEBYLEX x \"\" +", "-ERR min or max not valid string range item"},
	{"ZRANGEBYLEX x \"+x\" +", "-ERR min or max not valid string range item"},
	{"ZRANGEBYLEX x - + LIMIT 1 2", "*2[\"a\", \"aa\"]"},
	{"ZRANGEBYLEX x - + LIMIT 1 -1", "*6[\"a\", \"aa\", \"b\", \"c\", \"d\", \"e\"]"},
	{"ZRANGEBYLEX x - + LIMIT -1 1", "*0[]"},
	{"ZREVRANGEBYLEX x + - LIMIT 0 2", "*2[\"e\", \"d\"]"},
	{"ZREVRANGEBYLEX x [c [a", "*4[\"c\", \"b\", \"aa\", \"a\"]"},
	{"ZREVRANGEBYLEX x [a [c", "*0[]"},
	{"ZRANGE x [e - BYLEX REV", "*7[\"e\", \"d\", \"c\", \"b\", \"aa\", \"a\", \"B\"]"},
	{"ZRANGE x - + BYLEX LIMIT 1 -1", "*6[\"a\", \"aa\", \"b\", \"c\", \"d\", \"e\"]"},
	{"ZRANGE x a b BYLEX WITHSCORES", "-ERR syntax error, WITHSCORES not supported in combination with BYLEX"},
	{"ZRANGE x a b BYLEX", "-ERR min or max not valid string range item"},
	{"ZLEXCOUNT x - +", ":7"},
	{"ZLEXCOUNT x [b (d", ":2"},
	{"ZLEXCOUNT x (d [b", ":0"},
	{"ZLEXCOUNT x a b", "-ERR min or max not valid string range item"},
	{"ZLEXCOUNT nokey - +", ":0"},
	{"ZLEXCOUNT nokey a b", "-ERR min or max not valid string range item"},
	{"ZRANGE nokey 0 1 BYLEX", "-ERR min or max not valid string range item"},
	// ZREMRANGEBYSCORE, ZREMRANGEBYRANK, ZREMRANGEBYLEX
	{"ZADD w 1 a 2 b 3 c 4 d 5 e 6 f", ":6"},
	{"ZREMRANGEBYSCORE w (1 2", ":1"},
	{"ZREMRANGEBYSCORE w 10 20", ":0"},
	{"ZREMRANGEBYSCORE w a 2", "-ERR min or max is not a float"},
	{"ZREMRANGEBYSCORE nokey a 2", "-ERR min or max is not a float"},
	{"ZREMRANGEBYSCORE nokey 1 2", ":0"},
	{"ZRANGE w 0 -1", "*5[\"a\", \"c\", \"d\", \"e\", \"f\"]"},
	{"ZREMRANGEBYRANK w -1 -1", ":1"},
	{"ZREMRANGEBYRANK w 5 1", ":0"},
	{"ZREMRANGEBYRANK w 0 0", ":1"},
	{"ZREMRANGEBYRANK w x 0", "-ERR value is not an integer or out of range"},
	{"ZREMRANGEBYRANK nokey 0 1", ":0"},
	{"ZRANGE w 0 -1", "*3[\"c\", \"d\", \"e\"]"},
	{"ZREMRANGEBYRANK w 0 -1", ":3"},
	{"EXISTS w", ":0"},
	{"ZADD w 0 a 0 b 0 c", ":3"},
	{"ZREMRANGEBYLEX w [a (c", ":2"},
	{"ZREMRANGEBYLEX w a c", "-ERR min or max not valid string range item"},
	{"ZREMRANGEBYLEX nokey - +", ":0"},
	{"ZREMRANGEBYLEX w - +", ":1"},
	{"EXISTS w", ":0"},
	// ZPOPMIN and ZPOPMAX
	{"ZADD q 1 a 2 b 3 c 4 d", ":4"},
	{"ZPOPMIN q", "*2[\"a\", \"1\"]"},
	{"ZPOPMAX q", "*2[\"d\", \"4\"]"},
	{"ZPOPMIN q 0", "*0[]"},
	{"ZPOPMIN q -1", "-ERR value is out of range, must be positive"},
	{"ZPOPMIN q x", "-ERR value is out of range, must be positive"},
	{"ZPOPMIN q 1 2", "-ERR syntax error"},
	{"ZPOPMAX q 10", "*4[\"c\", \"3\", \"b\", \"2\"]"},
	{"EXISTS q", ":0"},
	{"ZPOPMIN q", "*0[]"},
	{"ZPOPMIN nokey", "*0[]"},
	{"ZPOPMIN nokey 0", "*0[]"},
	{"ZPOPMAX nokey 3", "*0[]"},
	// wrong kind
	{"SET str x", "+OK"},
	{"ZADD str 1 a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZADD str x a", "-ERR value is not a valid float"},
	{"ZADD str xx 1 a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZINCRBY str 1 a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZREM str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZSCORE str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZMSCORE str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZCARD str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZCOUNT str 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZCOUNT str a 1", "-ERR min or max is not a float"},
	{"ZLEXCOUNT str - +", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZRANK str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZREVRANK str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZRANGE str 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZRANGE str a 1", "-ERR value is not an integer or out of range"},
	{"ZRANGE str 0 1 BYSCORE", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZRANGEBYSCORE str 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZREVRANGEBYSCORE str 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZRANGEBYLEX str - +", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZREVRANGEBYLEX str + -", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZREVRANGE str 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZREMRANGEBYSCORE str 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZREMRANGEBYRANK str 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZREMRANGEBYLEX str - +", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZPOPMIN str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZPOPMIN str 0", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZPOPMAX str x", "-ERR value is out of range, must be positive"},
	// duplicates within one command
	{"ZADD dup 1 a 2 a", ":1"},
	{"ZSCORE dup a", "\"2\""},
	{"ZADD dup CH 3 a 4 a", ":2"},
	{"ZADD dup NX 5 b 6 b", ":1"},
	{"ZSCORE dup b", "\"5\""},
	{"ZADD dup INCR 1 a", "\"5\""},
	{"ZREM dup a a b", ":2"},
	{"EXISTS dup", ":0"},
	{"ZADD e 1 \"\"", ":1"},
	{"ZSCORE e \"\"", "\"1\""},
	{"ZRANGEBYLEX e [ +", "*1[\"\"]"},
	{"ZRANGEBYLEX e ( +", "*0[]"},
}

func TestZSetTranscript(t *testing.T)             { ctTranscript(t, zsetTranscript) }
func TestZSetTranscriptAgainstRedis(t *testing.T) { ctTranscriptAgainstRedis(t, zsetTranscript) }

func TestZSetCommands(t *testing.T) {
	ttl := []string{"ZADD z 1 a 2 b", "PEXPIRE z 100"}
	ctRun(t, []ctCase{
		{name: "zrange expired", setup: ttl, cmd: "ZRANGE z 0 -1", now: 1100, want: "*0[]"},
		{name: "zscore live", setup: ttl, cmd: "ZSCORE z a", now: 1099, want: `"1"`},
		{name: "zadd xx on expired", setup: ttl, cmd: "ZADD z XX 5 a", now: 1100, want: ":0"},
		{name: "zincrby on expired starts afresh", setup: ttl, cmd: "ZINCRBY z 5 a", now: 1100, want: `"5"`},
		{name: "zcard expired", setup: ttl, cmd: "ZCARD z", now: 1100, want: ":0"},
		{name: "ties ordered by member bytes", setup: []string{`ZADD z 1 b 1 a 1 "\xff" 1 "\x00" 1 B`}, cmd: "ZRANGE z 0 -1", want: "*5[\"\x00\", \"B\", \"a\", \"b\", \"\xff\"]"},
		{name: "zrevrange ties", setup: []string{"ZADD z 1 b 1 a 2 c"}, cmd: "ZREVRANGE z 0 -1", want: `*3["c", "b", "a"]`},
		{name: "update keeps order", setup: []string{"ZADD z 1 a 2 b 3 c", "ZADD z 2.5 a"}, cmd: "ZRANGE z 0 -1 WITHSCORES", want: `*6["b", "2", "a", "2.5", "c", "3"]`},
		{name: "fair lock head", setup: []string{"ZADD t 1795342092073 c1 1795342097073 c2", "ZINCRBY t -10000 c2"}, cmd: "ZRANGE t 0 0 WITHSCORES", want: `*2["c2", "1795342087073"]`},
		{name: "inf scores", setup: []string{"ZADD z -inf a +inf b 0 c"}, cmd: "ZRANGEBYSCORE z -inf +inf WITHSCORES", want: `*6["a", "-inf", "c", "0", "b", "inf"]`},
		{name: "exclusive inf", setup: []string{"ZADD z -inf a +inf b 0 c"}, cmd: "ZCOUNT z (-inf (+inf", want: ":1"},
	})
}

func TestZSetTTLKept(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	ctApply(t, f, 1000, "ZADD z 1 a 2 b 3 c 4 d 5 e")
	ctApply(t, f, 1000, "PEXPIRE z 500")
	for _, cmd := range []string{"ZADD z 6 f", "ZINCRBY z 1 a", "ZREM z b", "ZREMRANGEBYSCORE z 3 3", "ZREMRANGEBYRANK z 0 0", "ZPOPMAX z"} {
		if r := ctApply(t, f, 1000, cmd); r.IsError() {
			t.Fatalf("%s: %s", cmd, ctFormat(r))
		}
	}
	if got := ctFormat(ctApply(t, f, 1000, "PTTL z")); got != ":500" {
		t.Errorf("PTTL after member changes: %s", got)
	}
}

func TestZSetVersions(t *testing.T) {
	z := []string{"ZADD z 1 a 2 b 3 c"}
	ctRunVersions(t, []ctVersionCase{
		{cmd: "ZADD z 1 a", key: "z", bumps: true},
		{setup: z, cmd: "ZADD z 5 a", key: "z", bumps: true},
		{setup: z, cmd: "ZADD z 1 a", key: "z", bumps: false}, // same score: Redis does not signal
		{setup: z, cmd: "ZADD z NX 5 a", key: "z", bumps: false},
		{setup: z, cmd: "ZADD z XX 5 zz", key: "z", bumps: false},
		{setup: z, cmd: "ZADD z GT 0 a", key: "z", bumps: false},
		{setup: z, cmd: "ZADD z INCR 1 a", key: "z", bumps: true},
		{setup: z, cmd: "ZINCRBY z 0 a", key: "z", bumps: false},
		{setup: z, cmd: "ZINCRBY z 1 a", key: "z", bumps: true},
		{setup: z, cmd: "ZREM z a", key: "z", bumps: true},
		{setup: z, cmd: "ZREM z zz", key: "z", bumps: false},
		{setup: z, cmd: "ZREMRANGEBYSCORE z 1 1", key: "z", bumps: true},
		{setup: z, cmd: "ZREMRANGEBYSCORE z 10 20", key: "z", bumps: false},
		{setup: z, cmd: "ZREMRANGEBYRANK z 0 0", key: "z", bumps: true},
		{setup: z, cmd: "ZREMRANGEBYRANK z 5 6", key: "z", bumps: false},
		{setup: z, cmd: "ZREMRANGEBYLEX z - +", key: "z", bumps: true},
		{setup: z, cmd: "ZPOPMIN z", key: "z", bumps: true},
		{setup: z, cmd: "ZPOPMAX z 0", key: "z", bumps: false},
		{setup: z, cmd: "ZSCORE z a", key: "z", bumps: false},
		{setup: z, cmd: "ZMSCORE z a b", key: "z", bumps: false},
		{setup: z, cmd: "ZCARD z", key: "z", bumps: false},
		{setup: z, cmd: "ZCOUNT z -inf +inf", key: "z", bumps: false},
		{setup: z, cmd: "ZLEXCOUNT z - +", key: "z", bumps: false},
		{setup: z, cmd: "ZRANK z a", key: "z", bumps: false},
		{setup: z, cmd: "ZREVRANK z a", key: "z", bumps: false},
		{setup: z, cmd: "ZRANGE z 0 -1 WITHSCORES", key: "z", bumps: false},
		{setup: z, cmd: "ZREVRANGE z 0 -1", key: "z", bumps: false},
		{setup: z, cmd: "ZRANGEBYSCORE z -inf +inf", key: "z", bumps: false},
		{setup: z, cmd: "ZREVRANGEBYSCORE z +inf -inf", key: "z", bumps: false},
		{setup: z, cmd: "ZRANGEBYLEX z - +", key: "z", bumps: false},
		{setup: z, cmd: "ZREVRANGEBYLEX z + -", key: "z", bumps: false},
	})
}

// TestZSetLarge checks ranks, ranges and counts of a sorted set far larger
// than a skip list's first levels against a sorted slice.
func TestZSetLarge(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	type entry struct {
		m string
		s int
	}
	scores := map[string]int{}
	for i := 0; i < 4000; i++ {
		m := "m" + strconv.Itoa((i*7919)%3000)
		s := (i * 31) % 101
		if i%5 == 4 {
			ctApply(t, f, 1, "ZREM z "+m)
			delete(scores, m)
			continue
		}
		ctApply(t, f, 1, "ZADD z "+strconv.Itoa(s)+" "+m)
		scores[m] = s
	}
	var ref []entry
	for m, s := range scores {
		ref = append(ref, entry{m, s})
	}
	slicesSortEntries := func() {
		for i := 1; i < len(ref); i++ {
			for j := i; j > 0 && (ref[j].s < ref[j-1].s || ref[j].s == ref[j-1].s && ref[j].m < ref[j-1].m); j-- {
				ref[j], ref[j-1] = ref[j-1], ref[j]
			}
		}
	}
	slicesSortEntries()
	if got := ctApply(t, f, 1, "ZCARD z").Int; int(got) != len(ref) {
		t.Fatalf("ZCARD %d, want %d", got, len(ref))
	}
	all := ctApply(t, f, 1, "ZRANGE z 0 -1")
	for i, e := range all.Elems {
		if string(e.Str) != ref[i].m {
			t.Fatalf("ZRANGE element %d: %s, want %s", i, e.Str, ref[i].m)
		}
	}
	for i := 0; i < len(ref); i += 37 {
		if got := ctApply(t, f, 1, "ZRANK z "+ref[i].m).Int; int(got) != i {
			t.Fatalf("ZRANK %s: %d, want %d", ref[i].m, got, i)
		}
		if got := ctApply(t, f, 1, "ZREVRANK z "+ref[i].m).Int; int(got) != len(ref)-1-i {
			t.Fatalf("ZREVRANK %s: %d, want %d", ref[i].m, got, len(ref)-1-i)
		}
	}
	for lo := 0; lo <= 100; lo += 9 {
		hi := lo + 13
		want := 0
		first := -1
		for i, e := range ref {
			if e.s >= lo && e.s <= hi {
				want++
				if first < 0 {
					first = i
				}
			}
		}
		q := strconv.Itoa(lo) + " " + strconv.Itoa(hi)
		if got := ctApply(t, f, 1, "ZCOUNT z "+q).Int; int(got) != want {
			t.Fatalf("ZCOUNT %s: %d, want %d", q, got, want)
		}
		r := ctApply(t, f, 1, "ZRANGEBYSCORE z "+q+" LIMIT 5 3")
		for k, e := range r.Elems {
			if string(e.Str) != ref[first+5+k].m {
				t.Fatalf("ZRANGEBYSCORE %s LIMIT 5 3: %s", q, ctFormat(r))
			}
		}
	}
}

// TestZSetRandomLargeAgainstRedis drives sorted sets past Redis's listpack
// limit (128 members), where Redis switches to its skip list.
func TestZSetRandomLargeAgainstRedis(t *testing.T) {
	rc := ctDialRedis(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	num := func(n int) string { return strconv.Itoa(rng.Intn(2*n+1) - n) }
	mem := func() string { return "m" + strconv.Itoa(rng.Intn(400)) }
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	bound := func() string { return pick("", "(") + pick(num(30), "-inf", "+inf", "1.5") }
	lex := func() string { m := mem(); return pick("-", "+", "[", "(") + m[:1+rng.Intn(len(m))] }
	gens := []func() string{
		func() string {
			return "ZADD z " + pick("", "NX ", "XX ", "GT ", "LT ", "CH ") + num(30) + " " + mem() + " " + num(30) + " " + mem()
		},
		func() string { return "ZINCRBY z " + num(5) + " " + mem() },
		func() string { return "ZREM z " + mem() + " " + mem() },
		func() string {
			return "ZRANGE z " + num(450) + " " + num(450) + pick("", " REV") + pick("", " WITHSCORES")
		},
		func() string {
			return "ZRANGE z " + bound() + " " + bound() + " BYSCORE" + pick("", " REV") + pick("", " LIMIT "+num(50)+" "+num(20)) + pick("", " WITHSCORES")
		},
		func() string { return "ZCOUNT z " + bound() + " " + bound() },
		func() string { return pick("ZRANK", "ZREVRANK", "ZSCORE") + " z " + mem() },
		func() string { return "ZREMRANGEBYRANK z " + num(450) + " " + num(450) },
		func() string { return "ZREMRANGEBYSCORE z " + bound() + " " + bound() },
		func() string { return pick("ZPOPMIN", "ZPOPMAX") + " z " + strconv.Itoa(rng.Intn(4)) },
		func() string { return "ZADD zl 0 " + mem() + " 0 " + mem() + " 0 " + mem() },
		func() string {
			return "ZRANGE zl " + lex() + " " + lex() + " BYLEX" + pick("", " REV") + pick("", " LIMIT "+num(50)+" "+num(20))
		},
		func() string { return "ZLEXCOUNT zl " + lex() + " " + lex() },
		func() string { return "ZREMRANGEBYLEX zl " + lex() + " " + lex() },
	}
	var tr []string
	for i := 0; i < 300; i++ {
		tr = append(tr, "ZADD z "+num(30)+" "+mem(), "ZADD zl 0 "+mem())
	}
	for i := 0; i < 5000; i++ {
		tr = append(tr, gens[rng.Intn(len(gens))]())
	}
	tr = append(tr, "OBJECT ENCODING z", "ZCARD z", "ZRANGE z 0 -1 WITHSCORES", "ZRANGE zl 0 -1")
	ctDiff(t, rc, tr)
}
