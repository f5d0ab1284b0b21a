// Package transport authenticates the connections between cluster
// members: a node reads nothing a peer sends (no Raft RPC, no forwarded
// command) before the peer has proven that it is a member. PeerAuth is what
// the cluster's stream layer calls on every connection it accepts or dials;
// SecretAuth proves knowledge of a shared secret by a mutual
// challenge-response, without sending the secret; TLSAuth makes the
// connection mutual TLS with certificates the members' CAs signed
// (--tls-cluster), and reloads them; Chain asks a peer to pass several.
package transport
