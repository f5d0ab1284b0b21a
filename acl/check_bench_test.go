package acl

import "testing"

// BenchmarkCheckLockScript is the check of one lock script's EVALSHA and
// of the redis.call it makes, for a user limited to lock keys.
func BenchmarkCheckLockScript(b *testing.B) {
	t, u, err := NewUsers().SetUser("locker", []string{"on", "~{lock*", "~redisson_lock__channel:*", "&redisson_lock__channel:*", "+@all", "-@admin", "-@dangerous"})
	if err != nil {
		b.Fatal(err)
	}
	_ = t
	evalsha := [][]byte{[]byte("EVALSHA"), []byte("0123456789012345678901234567890123456789"), []byte("1"), []byte("{lock12}"), []byte("30000"), []byte("uuid:12")}
	hincr := [][]byte{[]byte("hincrby"), []byte("{lock12}"), []byte("uuid:12"), []byte("1")}
	pexpire := [][]byte{[]byte("pexpire"), []byte("{lock12}"), []byte("30000")}
	b.ReportAllocs()
	for b.Loop() {
		for _, argv := range [][][]byte{evalsha, hincr, pexpire} {
			if d := u.Check(LookupArgs(argv), argv); d.Reason != DeniedNone {
				b.Fatal(d)
			}
		}
	}
}
