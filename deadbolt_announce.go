package deadbolt

import (
	"fmt"
	"net"
)

// announceAddr is the client address a member publishes to the others
// (ROLE, INFO replication, Sentinel and Cluster replies, redirects): the
// configured AnnounceAddr; else the address it listens on, except that a
// listener on every interface (0.0.0.0, ::) publishes the host the other
// members reach it at, its Raft address's, with the listener's port. A
// published 0.0.0.0 would send every client that follows it to its own
// machine (Redis Cluster, likewise, publishes the address its bus is seen
// at unless cluster-announce-ip says otherwise).
func announceAddr(announce, listen, raftAddr string) string {
	if announce != "" {
		return announce
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || !unspecified(host) {
		return listen
	}
	rhost, _, err := net.SplitHostPort(raftAddr)
	if err != nil || unspecified(rhost) {
		return listen // nothing better known: the operator should set AnnounceAddr
	}
	return net.JoinHostPort(rhost, port)
}

func unspecified(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// checkAnnounce refuses an AnnounceAddr that is not host:port with a
// numeric port, or that names every interface.
func checkAnnounce(a string) error {
	if a == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("announce address %q: %v", a, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "0" {
		return fmt.Errorf("announce address %q: the port must be a number other than 0", a)
	}
	if unspecified(host) {
		return fmt.Errorf("announce address %q: a client cannot reach %q; give the address clients and members use", a, host)
	}
	return nil
}
