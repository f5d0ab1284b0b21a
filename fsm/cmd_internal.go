package fsm

import (
	"sort"
	"strconv"

	"github.com/deadbolt/deadbolt/resp"
)

// Commands the node proposes itself. Clients cannot send them: the server
// refuses every command flagged Internal.
func init() {
	register(
		Spec{Name: "__reap", Arity: 2, Flags: Write | Internal | NoScript, fn: cmdReap},
		Spec{Name: "__tick", Arity: 1, Flags: Write | Internal | NoScript, fn: cmdTick},
		Spec{Name: "__node", Arity: 3, Flags: Write | Internal | NoScript, fn: cmdNode},
		Spec{Name: "__forget", Arity: 2, Flags: Write | Internal | NoScript, fn: cmdForget},
		Spec{Name: "__setconfig", Arity: 3, Flags: Write | Internal | NoScript, fn: cmdSetConfig},
	)
}

// ReapCommand is the command a node proposes for active expiry: remove up
// to limit keys whose deadline has passed, earliest first.
func ReapCommand(limit int) Command {
	return Command{Args: [][]byte{[]byte("__reap"), []byte(strconv.Itoa(limit))}}
}

// TickCommand changes nothing but the clock: an idle leader proposes it so
// that the state machine's time keeps up with the leader's.
func TickCommand() Command { return Command{Args: [][]byte{[]byte("__tick")}} }

// NodeCommand records a cluster member's client (RESP) address, so every
// node can name the leader's address.
func NodeCommand(id, addr string) Command {
	return Command{Args: [][]byte{[]byte("__node"), []byte(id), []byte(addr)}}
}

// ForgetCommand removes a member's address.
func ForgetCommand(id string) Command {
	return Command{Args: [][]byte{[]byte("__forget"), []byte(id)}}
}

func cmdReap(c *Ctx, args [][]byte) resp.Reply {
	limit, err := strconv.Atoi(string(args[1]))
	if err != nil || limit <= 0 {
		return resp.Err(msgSyntax)
	}
	return resp.IntReply(int64(c.reap(limit)))
}

func cmdTick(*Ctx, [][]byte) resp.Reply { return resp.OK }

func cmdNode(c *Ctx, args [][]byte) resp.Reply {
	c.mustWrite()
	c.f.nodes[string(args[1])] = string(args[2])
	return resp.OK
}

func cmdForget(c *Ctx, args [][]byte) resp.Reply {
	c.mustWrite()
	delete(c.f.nodes, string(args[1]))
	return resp.OK
}

// NodeAddr returns the client address a member registered.
func (f *FSM) NodeAddr(id string) (string, bool) {
	a, ok := f.nodes[id]
	return a, ok
}

// Nodes returns the registered members' ids, sorted.
func (f *FSM) Nodes() []string {
	ids := make([]string, 0, len(f.nodes))
	for id := range f.nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
