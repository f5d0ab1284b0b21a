package fsm

import (
	"strconv"

	"github.com/deadbolt/deadbolt/resp"
)

// Commands the node proposes itself. Clients cannot send them: the server
// refuses every command flagged Internal.
func init() {
	register(
		Spec{Name: "__reap", Arity: 2, Flags: Write | Internal | NoScript, fn: cmdReap},
	)
}

// ReapCommand is the command a node proposes for active expiry: remove up
// to limit keys whose deadline has passed, earliest first.
func ReapCommand(limit int) Command {
	return Command{Args: [][]byte{[]byte("__reap"), []byte(strconv.Itoa(limit))}}
}

func cmdReap(c *Ctx, args [][]byte) resp.Reply {
	limit, err := strconv.Atoi(string(args[1]))
	if err != nil || limit <= 0 {
		return resp.Err(msgSyntax)
	}
	return resp.IntReply(int64(c.reap(limit)))
}
