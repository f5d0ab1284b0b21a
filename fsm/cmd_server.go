package fsm

import "github.com/deadbolt/deadbolt/resp"

// Server and connection commands that scripts and transactions may run,
// so the state machine must know them too. The node answers most of them
// itself outside MULTI and scripts.
func init() {
	register(
		Spec{Name: "publish", Arity: 3, Flags: Write | PubSub | Fast, fn: cmdPublish},
		Spec{Name: "spublish", Arity: 3, Flags: Write | PubSub | Fast, FirstKey: 1, LastKey: 1, Step: 1, fn: cmdPublish},
		Spec{Name: "time", Arity: 1, Flags: Read | Fast, fn: cmdTime},
		Spec{Name: "select", Arity: 2, Flags: Read | Fast, fn: cmdSelect},
		Spec{Name: "echo", Arity: 2, Flags: Read | Fast, fn: cmdEcho},
		Spec{Name: "ping", Arity: -1, Flags: Read | Fast, fn: cmdPing},
		// UNWATCH queued inside MULTI: EXEC unwatches anyway.
		Spec{Name: "unwatch", Arity: 1, Flags: Read | Fast | NoScript, fn: cmdUnwatch},
	)
}

// cmdPublish records the message as an effect and replies 0; the node
// delivers it after applying and replaces the reply of a top-level
// PUBLISH with the number of its own subscribers that received it
// (Result.Receivers). SPUBLISH's channel counts as a key position, as in
// COMMAND INFO.
func cmdPublish(c *Ctx, args [][]byte) resp.Reply {
	c.publish(args[1], args[2], optEq(args[0], "spublish"))
	c.lockPublished(args[1])
	return resp.Zero
}

// cmdTime replies with the command's time (from the log), as Unix seconds
// and microseconds.
func cmdTime(c *Ctx, args [][]byte) resp.Reply {
	sec, ms := c.now/1000, c.now%1000
	if ms < 0 {
		sec, ms = sec-1, ms+1000
	}
	return resp.ArrayReply(resp.BulkInt(sec), resp.BulkInt(ms*1000))
}

// cmdSelect switches the database for the rest of the transaction or
// script; Result.DB carries it back to the connection.
func cmdSelect(c *Ctx, args [][]byte) resp.Reply {
	n, msg := parseIntArg(args[1])
	if msg != "" {
		return resp.Err(msg)
	}
	if n < 0 || n >= NumDBs {
		return resp.Err(msgDBIndex)
	}
	c.selectDB(n)
	return resp.OK
}

func cmdEcho(c *Ctx, args [][]byte) resp.Reply {
	return resp.BulkReply(args[1])
}

// cmdPing replies PONG, or its argument as a bulk string.
func cmdPing(c *Ctx, args [][]byte) resp.Reply {
	switch len(args) {
	case 1:
		return resp.StatusReply("PONG")
	case 2:
		return resp.BulkReply(args[1])
	}
	return resp.Err(WrongArity("ping"))
}

func cmdUnwatch(*Ctx, [][]byte) resp.Reply { return resp.OK }
