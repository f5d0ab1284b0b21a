package fsm

import "github.com/deadbolt/deadbolt/resp"

// The cluster's identity: a random id the first leader of a cluster
// proposes (cluster/clusterid.go), replicated through the log and in
// snapshots (format version 4), so that every member, and every member
// added later, learns it. The first __clusterid applied sets it; a later
// one with another id changes nothing (two leaders may each have proposed
// one, the log orders them), so every node holds the same.
func init() {
	register(Spec{Name: "__clusterid", Arity: 2, Flags: Write | Internal | NoScript, fn: cmdClusterID})
}

// MaxClusterIDLen bounds a cluster id (cluster ids this build makes have 32
// hex digits).
const MaxClusterIDLen = 64

// ValidClusterID reports whether id may be a cluster id: 1 to
// MaxClusterIDLen letters, digits, '-' or '_'.
func ValidClusterID(id string) bool {
	if id == "" || len(id) > MaxClusterIDLen {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ClusterIDCommand proposes id as the cluster's identity.
func ClusterIDCommand(id string) Command {
	return Command{Args: [][]byte{[]byte("__clusterid"), []byte(id)}}
}

// ClusterID is the cluster's identity, "" before one was applied.
func (f *FSM) ClusterID() string { return f.clusterID }

// ForgetClusterID clears the cluster id of a state machine that no cluster
// runs: a backup about to seed a new cluster (cluster/backup.go).
func (f *FSM) ForgetClusterID() { f.clusterID = "" }

func cmdClusterID(c *Ctx, args [][]byte) resp.Reply {
	id := string(args[1])
	if !ValidClusterID(id) {
		return resp.Err(msgSyntax)
	}
	if c.f.clusterID == "" {
		c.mustWrite()
		c.f.clusterID = id
	}
	return resp.BulkString(c.f.clusterID)
}
