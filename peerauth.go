package deadbolt

import (
	"fmt"
	"net"
	"time"

	"github.com/deadbolt/deadbolt/transport"
)

// peerAuth is how a node authenticates the other members: with the
// cluster secret, or not at all where that is allowed (a Raft address on
// loopback, which only this machine reaches, or InsecureCluster).
func peerAuth(cfg Config) (transport.PeerAuth, error) {
	if len(cfg.ClusterSecret) > 0 {
		a, err := transport.NewSecretAuth(cfg.ClusterSecret, 5*time.Second)
		if err != nil {
			return nil, err
		}
		log := cfg.Logger
		a.OnFailure = func(remote string, err error) {
			if log != nil {
				log.Warn("cluster: a peer failed authentication; nothing it sent was read", "remote", remote, "err", err)
			}
		}
		return a, nil
	}
	if cfg.InsecureCluster || loopback(cfg.RaftAddr) {
		return nil, nil
	}
	return nil, fmt.Errorf("the Raft address %s is not a loopback address, and nothing would stop a process that is no member from speaking Raft to it (changing the term, the leader, the data): give every member the same --cluster-secret-file, or --insecure-cluster to accept whoever can reach it", cfg.RaftAddr)
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
