package transport

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// handshake runs both sides over a pipe and returns their errors.
func handshake(t *testing.T, server, client PeerAuth) (serr, cerr error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		_, err := server.Server(a)
		if err != nil {
			a.Close() // as the stream layer does: the dialer sees it closed
		}
		done <- err
	}()
	_, cerr = client.Client(b)
	if cerr != nil {
		b.Close() // as the stream layer does
	}
	serr = <-done
	return serr, cerr
}

func newAuth(t *testing.T, secret string) *SecretAuth {
	t.Helper()
	a, err := NewSecretAuth([]byte(secret), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSecretAuthSameSecret(t *testing.T) {
	s, c := newAuth(t, "the same secret, 16+"), newAuth(t, "the same secret, 16+")
	if serr, cerr := handshake(t, s, c); serr != nil || cerr != nil {
		t.Fatalf("handshake: acceptor %v, dialer %v", serr, cerr)
	}
	if s.Failures()+c.Failures() != 0 {
		t.Fatal("a good handshake was counted as a failure")
	}
}

func TestSecretAuthOtherSecret(t *testing.T) {
	s, c := newAuth(t, "the members' secret"), newAuth(t, "a stranger's secret")
	serr, cerr := handshake(t, s, c)
	if cerr == nil || !errors.Is(cerr, ErrAuth) {
		t.Fatalf("the dialer with another secret accepted the acceptor: %v", cerr)
	}
	if serr == nil || c.Failures() != 1 || s.Failures() != 1 {
		t.Fatalf("acceptor %v; failures: dialer %d, acceptor %d", serr, c.Failures(), s.Failures())
	}
	// The acceptor learns it only from the dialer hanging up: it says
	// what that means, not a bare "reading its proof: EOF".
	if !strings.Contains(serr.Error(), "another secret") {
		t.Fatalf("acceptor: %v; want another secret named", serr)
	}
}

// A stranger that speaks raft straight away is refused before anything
// it sent is handed on, and named in the failure.
func TestSecretAuthStranger(t *testing.T) {
	s := newAuth(t, "the members' secret")
	var remote string
	var reason error
	s.OnFailure = func(r string, err error) { remote, reason = r, err }
	a, b := net.Pipe()
	defer b.Close()
	go func() {
		b.Write([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39})
		io.Copy(io.Discard, b)
	}()
	if _, err := s.Server(a); err == nil || !errors.Is(err, ErrAuth) {
		t.Fatalf("a stranger passed: %v", err)
	}
	if s.Failures() != 1 || remote == "" || reason == nil {
		t.Fatalf("failures %d, remote %q, reason %v", s.Failures(), remote, reason)
	}
}

// A peer that says nothing is dropped at the handshake's deadline.
func TestSecretAuthSilentPeer(t *testing.T) {
	s, err := NewSecretAuth([]byte("the members' secret"), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer b.Close()
	start := time.Now()
	if _, err := s.Server(a); err == nil {
		t.Fatal("a silent peer passed")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the handshake waited %v", d)
	}
}

func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("too short\n"), 0o600)
	if _, err := LoadSecretFile(short); err == nil {
		t.Fatal("a short secret was accepted")
	}
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("  0123456789abcdef0123  \n"), 0o600)
	if b, err := LoadSecretFile(good); err != nil || string(b) != "0123456789abcdef0123" {
		t.Fatalf("%q %v", b, err)
	}
	if _, err := LoadSecretFile(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing file was accepted")
	}
	if _, err := NewSecretAuth([]byte("short"), 0); err == nil {
		t.Fatal("NewSecretAuth took a short secret")
	}
}

// A dialer that hangs up after the challenge without a word (a member
// stopping during a rolling restart) is not counted, nor reported, as one
// holding another secret; one that refuses the proof is (above).
func TestSecretAuthDialerStoppedIsNoFailure(t *testing.T) {
	s := newAuth(t, "the members' secret")
	var told []error
	s.OnFailure = func(_ string, err error) { told = append(told, err) }
	a, b := net.Pipe()
	go func() {
		b.Write(append([]byte(handshakeMagic), make([]byte, nonceLen)...))
		io.ReadFull(b, make([]byte, nonceLen+macLen))
		b.Close()
	}()
	_, err := s.Server(a)
	a.Close()
	if err == nil || errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "may be stopping") {
		t.Fatalf("acceptor: %v; want no authentication failure, and a stopping dialer named", err)
	}
	if s.Failures() != 0 || len(told) != 0 {
		t.Fatalf("a closed connection counted as %d failures, reported %v", s.Failures(), told)
	}
}
