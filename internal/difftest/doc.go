// Package difftest runs differential tests: transcripts of Redis commands
// (testdata/transcripts/*.txt at the module root) are sent to a real
// redis-server and to deadbolt, and their raw replies must agree byte for
// byte, or as a step's options allow. TestTranscripts runs every file as a
// subtest, each against a fresh pair of servers, and reports every step
// that differs, with the file, the line, the command and both replies.
//
// The format is described at Parse. In short:
//
//	# Redisson's unlock, re-entered twice
//	@define unlock
//	if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; ...
//	@end
//	>conn2 SUBSCRIBE redisson_lock__channel:{l}
//	> EVAL ${unlock} 2 l redisson_lock__channel:{l} 0 30000 id:1
//	<conn2
//	>ttl PTTL l
//	>sorted SMEMBERS s
//
// To add a transcript, create testdata/transcripts/NAME.txt and run
//
//	go test ./internal/difftest/ -run 'TestTranscripts/NAME'
//
// Write what Redis does, not what deadbolt does today: a step that fails
// because deadbolt differs is a finding for deadbolt's owners, not a line to
// change. Use an option only where the difference is in the nature of the
// command (unordered replies, time that passes, connection ids) and say
// why in a comment above the line. Keep each file independent of the
// others; every file starts on empty servers. Prefer ttl over waiting;
// where expiry itself is tested, give the key a TTL of tens of
// milliseconds and use @waitgone, never a sleep.
package difftest
