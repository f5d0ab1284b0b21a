// Package difftest runs differential tests: transcripts of Redis commands
// (testdata/transcripts/*.txt at the module root) are sent to a real
// redis-server and to deadbolt, and their raw replies must agree byte for
// byte, or as a step's options allow.
//
// The transcript format is described at Parse; the README in
// testdata/transcripts says how to add one.
package difftest
