package deadbolt

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/deadbolt/deadbolt/transport"
)

// peerAuth is how a node authenticates the other members: mutual TLS
// (TLSCluster), the cluster secret, both (TLS first, so that the secret's
// handshake is encrypted), or not at all where that is allowed (a Raft
// address on loopback, which only this machine reaches, or
// InsecureCluster). tlsAuth is the TLS part, for SIGHUP and --join.
func peerAuth(cfg Config) (auth transport.PeerAuth, tlsAuth *transport.TLSAuth, err error) {
	var chain []transport.PeerAuth
	var onFailure func(remote string, err error)
	if cfg.Logger != nil {
		onFailure = newFailureLog(cfg.Logger, authFailureLogEvery, time.Now).report
	}
	if cfg.TLSCluster {
		if tlsAuth, err = transport.NewTLSAuth(memberTLS(cfg), 5*time.Second); err != nil {
			return nil, nil, err
		}
		tlsAuth.OnFailure = onFailure
		chain = append(chain, tlsAuth)
	}
	if len(cfg.ClusterSecret) > 0 {
		a, err := transport.NewSecretAuth(cfg.ClusterSecret, 5*time.Second)
		if err != nil {
			return nil, nil, err
		}
		a.OnFailure = onFailure
		chain = append(chain, a)
	}
	switch {
	case len(chain) == 1:
		return chain[0], tlsAuth, nil
	case len(chain) > 1:
		return transport.Chain(chain...), tlsAuth, nil
	case cfg.InsecureCluster || loopback(cfg.RaftAddr):
		return nil, nil, nil
	}
	return nil, nil, fmt.Errorf("the Raft address %s is not a loopback address, and nothing would stop a process that is no member from speaking Raft to it (changing the term, the leader, the data): give every member --tls-cluster (with certificates one CA signed) or the same --cluster-secret-file, or --insecure-cluster to accept whoever can reach it", cfg.RaftAddr)
}

// loopback reports whether addr's host can only be reached from this
// machine.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authFailureLogEvery bounds the "a peer failed authentication" records
// per peer host: raft dials again at every heartbeat, so a member with
// another secret or certificate was logged several times a second.
const authFailureLogEvery = 10 * time.Second

// authFailureLogBurst bounds the records of all peer hosts together per
// authFailureLogEvery: a scan from many addresses (an IPv6 range) would
// otherwise still log one record per address.
const authFailureLogBurst = 20

// failureLog logs failed handshakes, at most one per peer host every
// `every`, and at most authFailureLogBurst in all per `every`; the next
// record says how many it left out ("suppressed": that host's, and any
// host's the overall bound left out). Every failure is still counted by
// the transport.
type failureLog struct {
	logger      *slog.Logger
	every       time.Duration
	now         func() time.Time
	mu          sync.Mutex
	last        map[string]time.Time
	suppressed  map[string]int
	windowStart time.Time // the overall bound's current period
	inWindow    int       // records logged in it
	others      int       // failures the overall bound left out, not yet reported
}

func newFailureLog(logger *slog.Logger, every time.Duration, now func() time.Time) *failureLog {
	return &failureLog{logger: logger, every: every, now: now, last: map[string]time.Time{}, suppressed: map[string]int{}}
}

func (f *failureLog) report(remote string, err error) {
	host, _, e := net.SplitHostPort(remote)
	if e != nil {
		host = remote
	}
	f.mu.Lock()
	now := f.now()
	if t, ok := f.last[host]; ok && now.Sub(t) < f.every {
		f.suppressed[host]++
		f.mu.Unlock()
		return
	}
	if now.Sub(f.windowStart) >= f.every {
		f.windowStart, f.inWindow = now, 0
	}
	if f.inWindow >= authFailureLogBurst {
		f.others++
		f.mu.Unlock()
		return
	}
	f.inWindow++
	if len(f.last) >= 1024 { // a scan from many hosts: start again
		clear(f.last)
		clear(f.suppressed)
	}
	n := f.suppressed[host] + f.others
	f.others = 0
	delete(f.suppressed, host)
	f.last[host] = now
	f.mu.Unlock()
	f.logger.Warn("cluster: a peer failed authentication; nothing it sent was read", "remote", remote, "err", err, "suppressed", n)
}
