package fsm

import (
	"testing"
)

// hashTranscript was recorded from redis-server 7.0.15.
var hashTranscript = []ctStep{
	// HSET and HMSET: arity, new-field counts, insertion order
	{"HSET h", "-ERR wrong number of arguments for 'hset' command"},
	{"HSET h a", "-ERR wrong number of arguments for 'hset' command"},
	{"HSET h a 1 b", "-ERR wrong number of arguments for 'hset' command"},
	{"HMSET h a 1 b", "-ERR wrong number of arguments for 'hmset' command"},
	{"HSET h a 1 b 2", ":2"},
	{"HSET h a 1 c 3", ":1"},
	{"HSET H upper 1", ":1"},
	{"hset h B 2", ":1"},
	{"HGETALL h", "*8[\"a\", \"1\", \"b\", \"2\", \"c\", \"3\", \"B\", \"2\"]"},
	{"HDEL h a", ":1"},
	{"HSET h a 5", ":1"},
	{"HGETALL h", "*8[\"b\", \"2\", \"c\", \"3\", \"B\", \"2\", \"a\", \"5\"]"},
	{"HMSET h x 1 y 2", "+OK"},
	{"HKEYS h", "*6[\"b\", \"c\", \"B\", \"a\", \"x\", \"y\"]"},
	{"HVALS h", "*6[\"2\", \"3\", \"2\", \"5\", \"1\", \"2\"]"},
	{"HLEN h", ":6"},
	{"HSETNX h a 1", ":0"},
	{"HSETNX h z 1", ":1"},
	{"HGET h z", "\"1\""},
	{"HGET h nope", "$-1"},
	{"HGET nokey a", "$-1"},
	{"HMGET h a nope z", "*3[\"5\", $-1, \"1\"]"},
	{"HMGET nokey a b", "*2[$-1, $-1]"},
	{"HEXISTS h a", ":1"},
	{"HEXISTS h nope", ":0"},
	{"HEXISTS nokey a", ":0"},
	{"HSTRLEN h a", ":1"},
	{"HSTRLEN h nope", ":0"},
	{"HSTRLEN nokey a", ":0"},
	{"HSET h empty \"\"", ":1"},
	{"HSTRLEN h empty", ":0"},
	{"HGET h empty", "\"\""},
	// HINCRBY
	{"HINCRBY h n 5", ":5"},
	{"HINCRBY h n -10", ":-5"},
	{"HINCRBY h n x", "-ERR value is not an integer or out of range"},
	{"HINCRBY h n 1.5", "-ERR value is not an integer or out of range"},
	{"HINCRBY h n +1", "-ERR value is not an integer or out of range"},
	{"HINCRBY h n -0", "-ERR value is not an integer or out of range"},
	{"HINCRBY h n 01", "-ERR value is not an integer or out of range"},
	{"HINCRBY h n \" 1\"", "-ERR value is not an integer or out of range"},
	{"HINCRBY h n 9223372036854775808", "-ERR value is not an integer or out of range"},
	{"HINCRBY h big 9223372036854775806", ":9223372036854775806"},
	{"HINCRBY h big 1", ":9223372036854775807"},
	{"HINCRBY h big 1", "-ERR increment or decrement would overflow"},
	{"HINCRBY h neg -9223372036854775808", ":-9223372036854775808"},
	{"HINCRBY h neg -1", "-ERR increment or decrement would overflow"},
	{"HINCRBY h neg 9223372036854775807", ":-1"},
	{"HINCRBY h neg 0", ":-1"},
	{"HSET h s \"  1\"", ":1"},
	{"HINCRBY h s 1", "-ERR hash value is not an integer"},
	{"HINCRBYFLOAT h s 1", "-ERR hash value is not a float"},
	{"HSET h s 1.5", ":0"},
	{"HINCRBY h s 1", "-ERR hash value is not an integer"},
	{"HINCRBY made f 7", ":7"},
	{"HGETALL made", "*2[\"f\", \"7\"]"},
	// HINCRBYFLOAT: long double arithmetic, INCRBYFLOAT formatting
	{"HINCRBYFLOAT h f 0.1", "\"0.1\""},
	{"HINCRBYFLOAT h f 0.1", "\"0.2\""},
	{"HINCRBYFLOAT h f 0.1", "\"0.3\""},
	{"HGET h f", "\"0.3\""},
	{"HINCRBYFLOAT h f 1e20", "\"100000000000000000000\""},
	{"HINCRBYFLOAT h f -1e20", "\"0\""},
	{"HINCRBYFLOAT h f abc", "-ERR value is not a valid float"},
	{"HINCRBYFLOAT h f \" 1\"", "-ERR value is not a valid float"},
	{"HINCRBYFLOAT h f inf", "-ERR value is NaN or Infinity"},
	{"HINCRBYFLOAT h f -inf", "-ERR value is NaN or Infinity"},
	{"HINCRBYFLOAT h f nan", "-ERR value is not a valid float"},
	{"HINCRBYFLOAT h f 0x10", "\"16\""},
	{"HINCRBYFLOAT h f 1e400", "\"10000000000000000000281880683947586514586453433629052038625910693539685534008629862039363994848324160522094053927317616200295822777259255734023828976593340661017797447434546173917862448116674971723778943824391593338047470675026246684401359237513603830343735485505244955964979021825038280091068414947402456898653040951017512658092615827588920183472511643316591362664138176309734806343732497430221946880\""},
	{"HINCRBYFLOAT h f 1e5000", "-ERR value is not a valid float"},
	{"HINCRBYFLOAT h f 1e-5000", "-ERR value is not a valid float"},
	{"HINCRBYFLOAT h g 1e4932", "\"1000000000000000000006018949387963891323837774254533114773785041352533019486608722407533327779433142773666525563666277682061860906440460336623416164931097542108653623739947237824273607755646282077337746770628281083461244709457643633409272844851420914666765408339856497738306756454137037618440476182982865954054046320908299555942321302503320602080070208203623921079151881460203745014774931620490030394998719312614654064081373493248877120892455186383753439197870978041502797716880193955403107721911638646256939484197293128160329482360996995779489224859264034146949087194820794222433687849284561987230134006305414553626323614864479565079390052761980633463640128979696615362545507608303960553830866145592644372289102918602696741767741297153998359263135897985849697638678310586803720024647593066044070323761747439375151949994191528876172274034561238465689530914002496208547488452249219821049217690359246594326188537200846025476936856707726986425804304053688317572380292690880454677852210458790733177421098965346383845533016192965653377533421097553773202105452559589360227732550843545717469715211293029277100649951579279463212875228768700827274629951331584994203243708412190948315614798641721054158397351395747758548328754270534225721361640356227816080094892433366902417454242382629232277544026609640255325557814321580325340352330660617642326696140257239552549121071985189443846777623334881929189773707008403466595204838733621633273383631944856989484138444978386656058755310848833689791896484998847550364264104800800578245511762594691161545730891319744107953897993101008217601269310629890308357893793344340072837782716410520818640099771094401772024731084835860689936533035726854175396195351768096519310944631445923638053214575993378468775292865871435742249777979822775014324475845899615096380079899099538453121043851821349178371736640702645304284254885437611441690360616466368202194307769462209963387690446576691969551571041941288302648912827345194286271122230347823246073498285153708579500062656222714954113329293953346495615947784091175883554988117167387650681525781361864450364992605079129770604793291076559668041153558254765774288831330658676910296506538343982699076824147706077401185501337053676875440863113630172067902223837838525802181406003942606507609826320015193807633035586661539150425605940691768637845815434184585255915074081317250319572700370579877977177644345205933505850374212779064837146242765034714569464306865784829936445754893825213995710137567750342556762329137973387913047300554841737506800154984198686923965286147079273203561004647365286049876790788288301130050437207489067798842078443360167772245834103629301041345252122743437501935254370757049878526838283810705343010153283985958550741661374001212323172562230037290597675029278865489570268803618001520280748588481858632332145422181524500970533738858652881625738158955840469334830106366243262210429210258173978186522208306814207038831590332622155464159216193005478809313772661406449321989529908990407599717265354887081027622412165764793106246309910984757869627982700885055259900973567128498437782671492610351088858271463387495833021819318548705558606395846070390500323204636339383655528123657438115225035433947543876805317781492691295772410403746456774175666884503175504415270824258750305653788473882671038340481278188648013647450190431469737277008003041204693859153544058059108384516541261521127088116402349679151317227395183628490922161336429757386698401928682323657056924758648793848799822907606679071280964393541325129231682456669123450140879120137931548652537601508656209183486928384515842973760163601756230697826779237275078471824258664382133759876151537532598429521999758431018087001817485300919479583171049967781322202936864648780744025361452947117776701129210049872555316467204668470989130203733391349501708713181244068921199587314823974568234174792429139799088587794666528769986602820375968045445209219875596678877912103336949894142378173648692130854177898020194629670311101994938157038765957014792056173739623614871557317714453597336202068774935086409386414223375141765601758268418764114651053088281009248246110195084364468926837572992870110411414878770616397817334529367403238061699632089293543118185299881280463481800696201966723511922556078483839325067415562633057448408746541808590342228476964416681055875561781810005936328191844815915658719683522845979901018335050006246392027657149580332319739660376707180429166280658258434773362764563277134220525779869893832824866422909928484939374964071386248088592408142723646533801882861736205992781965360090000802821408763787641023437653119263757280212773694655213507075717622521160227187157631635583682130089364682543007292042009976150135189415923413244100006421082817394988300265734422677548100741829682842668334472314928702968616204691717366798642916146473018363370523427203416579250811577900985980957404830019403600361860520985937973506956557739754741783354728589350876379371163141086538418113791886622720\""},
	{"HINCRBYFLOAT h g 1e4932", "-ERR increment would produce NaN or Infinity"},
	{"HINCRBYFLOAT h z 1.5e10", "\"15000000001\""},
	{"HINCRBYFLOAT h z -1.5e10", "\"1\""},
	{"HINCRBYFLOAT h e 5.0e3", "\"5000\""},
	{"HINCRBYFLOAT h e -0.0000000000000000001", "\"5000\""},
	{"HINCRBYFLOAT h m -0", "\"0\""},
	{"HINCRBYFLOAT h n 1", "\"-4\""},
	{"HINCRBY h z 3", ":4"},
	{"HSET h inf inf", ":1"},
	{"HINCRBYFLOAT h inf 1", "-ERR increment would produce NaN or Infinity"},
	{"HINCRBYFLOAT nokey2 f 2.5", "\"2.5\""},
	// wrong kind
	{"SET str x", "+OK"},
	{"HSET str a 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HMSET str a 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HSETNX str a 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HGET str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HMGET str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HDEL str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HEXISTS str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HINCRBY str a 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HINCRBY str a x", "-ERR value is not an integer or out of range"},
	{"HINCRBYFLOAT str a 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HINCRBYFLOAT str a x", "-ERR value is not a valid float"},
	{"HINCRBYFLOAT str a inf", "-ERR value is NaN or Infinity"},
	{"HLEN str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HGETALL str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HKEYS str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HVALS str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HSTRLEN str a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HRANDFIELD str", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HRANDFIELD str 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
	// HDEL removes the key when empty
	{"HSET d a 1 b 2", ":2"},
	{"HDEL d a a nope", ":1"},
	{"HDEL d b c", ":1"},
	{"EXISTS d", ":0"},
	{"HDEL d b", ":0"},
	{"HDEL nokey a", ":0"},
	// HRANDFIELD: only the deterministic replies
	{"HRANDFIELD nokey", "$-1"},
	{"HRANDFIELD nokey 0", "*0[]"},
	{"HRANDFIELD nokey 5", "*0[]"},
	{"HRANDFIELD nokey x", "-ERR value is not an integer or out of range"},
	{"HRANDFIELD nokey 1 foo", "-ERR syntax error"},
	{"HRANDFIELD nokey 1 withvalues", "*0[]"},
	{"HRANDFIELD nokey -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"},
	{"HSET r a 1 b 2 c 3", ":3"},
	{"HRANDFIELD r 0", "*0[]"},
	{"HRANDFIELD r 0 WITHVALUES", "*0[]"},
	{"HRANDFIELD r 3", "*3[\"a\", \"b\", \"c\"]"},
	{"HRANDFIELD r 10 withvalues", "*6[\"a\", \"1\", \"b\", \"2\", \"c\", \"3\"]"},
	{"HRANDFIELD r 1 foo", "-ERR syntax error"},
	{"HRANDFIELD r 1 withvalues x", "-ERR syntax error"},
	{"HRANDFIELD r x withvalues", "-ERR value is not an integer or out of range"},
	{"HRANDFIELD r -9223372036854775807 withvalues", "-ERR value is out of range"},
	{"HRANDFIELD r -4611686018427387904 withvalues", "-ERR value is out of range"},
	{"HRANDFIELD r 4611686018427387904 withvalues", "-ERR value is out of range"},
	{"HRANDFIELD r -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"},
}

func TestHashTranscript(t *testing.T)             { ctTranscript(t, hashTranscript) }
func TestHashTranscriptAgainstRedis(t *testing.T) { ctTranscriptAgainstRedis(t, hashTranscript) }

func TestHashCommands(t *testing.T) {
	ctRun(t, []ctCase{
		{name: "hget expired", setup: []string{"HSET h a 1", "PEXPIRE h 100"}, cmd: "HGET h a", now: 1100, want: "$-1"},
		{name: "hget before expiry", setup: []string{"HSET h a 1", "PEXPIRE h 100"}, cmd: "HGET h a", now: 1099, want: `"1"`},
		{name: "hset on expired starts afresh", setup: []string{"HSET h a 1", "PEXPIRE h 100"}, cmd: "HSET h b 2", now: 2000, want: ":1"},
		{name: "hlen expired", setup: []string{"HSET h a 1 b 2", "PEXPIRE h 10"}, cmd: "HLEN h", now: 1010, want: ":0"},
		{name: "hincrby expired restarts", setup: []string{"HSET h n 5", "PEXPIRE h 10"}, cmd: "HINCRBY h n 1", now: 5000, want: ":1"},
		{name: "hgetall order", setup: []string{"HSET h z 1 a 2 m 3"}, cmd: "HGETALL h", want: `*6["z", "1", "a", "2", "m", "3"]`},
		{name: "readd goes last", setup: []string{"HSET h a 1 b 2 c 3", "HDEL h a"}, cmd: "HSET h a 4", want: ":1"},
		{name: "binary field", setup: []string{`HSET h "\x00\xff" "v\r\n"`}, cmd: `HGET h "\x00\xff"`, want: "\"v\r\n\""},
		{name: "hincrbyfloat keeps ttl", setup: []string{"HSET h f 1", "PEXPIRE h 500"}, cmd: "HINCRBYFLOAT h f 0.5", want: `"1.5"`},
		{name: "hmset arity", cmd: "HMSET h a", want: "-ERR wrong number of arguments for 'hmset' command"},
	})
}

func TestHashTTLKept(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	ctApply(t, f, 1000, "HSET h a 1")
	ctApply(t, f, 1000, "PEXPIRE h 500")
	for _, cmd := range []string{"HSET h b 2", "HDEL h a", "HINCRBY h c 1", "HINCRBYFLOAT h d 1", "HSETNX h e 1", "HMSET h f 1"} {
		ctApply(t, f, 1000, cmd)
	}
	if got := ctFormat(ctApply(t, f, 1000, "PTTL h")); got != ":500" {
		t.Errorf("PTTL after field changes: %s", got)
	}
}

func TestHashVersions(t *testing.T) {
	h := []string{"HSET h a 1 b 2"}
	ctRunVersions(t, []ctVersionCase{
		{setup: nil, cmd: "HSET h a 1", key: "h", bumps: true},
		{setup: h, cmd: "HSET h a 1", key: "h", bumps: true}, // Redis signals even when the value is the same
		{setup: h, cmd: "HMSET h c 3", key: "h", bumps: true},
		{setup: h, cmd: "HSETNX h c 1", key: "h", bumps: true},
		{setup: h, cmd: "HSETNX h a 1", key: "h", bumps: false},
		{setup: h, cmd: "HDEL h a", key: "h", bumps: true},
		{setup: h, cmd: "HDEL h nope", key: "h", bumps: false},
		{setup: h, cmd: "HDEL h a b", key: "h", bumps: true},
		{setup: h, cmd: "HINCRBY h n 1", key: "h", bumps: true},
		{setup: h, cmd: "HINCRBY h a 0", key: "h", bumps: true},
		{setup: h, cmd: "HINCRBYFLOAT h a 0.5", key: "h", bumps: true},
		{setup: h, cmd: "HGET h a", key: "h", bumps: false},
		{setup: h, cmd: "HMGET h a b", key: "h", bumps: false},
		{setup: h, cmd: "HEXISTS h a", key: "h", bumps: false},
		{setup: h, cmd: "HLEN h", key: "h", bumps: false},
		{setup: h, cmd: "HGETALL h", key: "h", bumps: false},
		{setup: h, cmd: "HKEYS h", key: "h", bumps: false},
		{setup: h, cmd: "HVALS h", key: "h", bumps: false},
		{setup: h, cmd: "HSTRLEN h a", key: "h", bumps: false},
		{setup: h, cmd: "HRANDFIELD h -5 WITHVALUES", key: "h", bumps: false},
	})
}

// HRANDFIELD picks the same fields on every node for the same log, picks
// distinct fields for a positive count, and does not always pick the same.
func TestHrandfieldDeterministic(t *testing.T) {
	build := func() *FSM {
		f := New(Options{})
		ctApply(t, f, 1000, "HSET h a 1 b 2 c 3 d 4 e 5 f 6 g 7 h 8")
		return f
	}
	f1, f2 := build(), build()
	defer f1.Close()
	defer f2.Close()
	seen := map[string]bool{}
	for now := int64(1000); now < 1040; now++ {
		for _, cmd := range []string{"HRANDFIELD h", "HRANDFIELD h 3", "HRANDFIELD h -5 WITHVALUES"} {
			a, b := ctFormat(ctRead(t, f1, now, cmd)), ctFormat(ctApply(t, f2, now, cmd))
			if a != b {
				t.Fatalf("%s at %d: %s vs %s", cmd, now, a, b)
			}
			seen[cmd+a] = true
		}
		r := ctApply(t, f1, now, "HRANDFIELD h 5")
		ctApply(t, f2, now, "HRANDFIELD h 5")
		if len(r.Elems) != 5 {
			t.Fatalf("HRANDFIELD h 5: %s", ctFormat(r))
		}
		distinct := map[string]bool{}
		for _, e := range r.Elems {
			distinct[string(e.Str)] = true
		}
		if len(distinct) != 5 {
			t.Fatalf("HRANDFIELD h 5 repeats: %s", ctFormat(r))
		}
		if r := ctApply(t, f1, now, "HRANDFIELD h -20"); len(r.Elems) != 20 {
			t.Fatalf("HRANDFIELD h -20: %s", ctFormat(r))
		}
		ctApply(t, f2, now, "HRANDFIELD h -20")
	}
	if len(seen) < 10 {
		t.Errorf("HRANDFIELD hardly varies: %d distinct replies", len(seen))
	}
}
