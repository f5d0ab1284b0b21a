package fsm

import (
	"strings"

	"github.com/deadbolt/deadbolt/resp"
)

// Commands a script may name that the node, not the state machine,
// answers. Redis flags them noscript, so a script that calls one gets
// Redis's answers in Redis's order: the arity error first (Redis looks the
// command up and checks its arity before its flags), then "not allowed
// from script". Arities are Redis 7.0's (COMMAND INFO).

// serverNoScript are the plain commands and their arity.
var serverNoScript = map[string]int{
	"auth": -2, "bgrewriteaof": 1, "bgsave": -1, "blmove": 6, "blpop": -3, "brpop": -3,
	"brpoplpush": 4, "bzpopmax": -3, "bzpopmin": -3, "debug": -2, "discard": 1, "exec": 1,
	"failover": -1, "fcall": -3, "fcall_ro": -3, "hello": -1, "monitor": 1, "multi": 1,
	"psubscribe": -2, "psync": -3, "punsubscribe": -1, "quit": -1, "replconf": -1,
	"replicaof": 3, "reset": 1, "role": 1, "save": 1, "shutdown": -1, "slaveof": 3,
	"ssubscribe": -2, "subscribe": -2, "sunsubscribe": -1, "sync": 1, "unsubscribe": -1,
	"wait": 3, "watch": -2,
}

// serverNoScriptSub are the container commands (arity -2 each) and the
// arity of their subcommands that Redis flags noscript. A container's
// other subcommands, and unknown ones, are unknown commands to a script
// here (Redis runs HELP; an unknown subcommand is unknown there too).
var serverNoScriptSub = map[string]map[string]int{
	"acl": {"cat": -2, "deluser": -3, "dryrun": -4, "genpass": -2, "getuser": 3, "list": 2, "load": 2,
		"log": -2, "save": 2, "setuser": -3, "users": 2, "whoami": 2},
	"client": {"caching": 3, "getname": 2, "getredir": 2, "id": 2, "info": 2, "kill": -3, "list": -2,
		"no-evict": 3, "pause": -3, "reply": 3, "setname": 3, "tracking": -3, "trackinginfo": 2,
		"unblock": -3, "unpause": 2},
	"config":  {"get": -3, "resetstat": 2, "rewrite": 2, "set": -4},
	"latency": {"doctor": 2, "graph": 3, "histogram": -2, "history": 3, "latest": 2, "reset": -2},
	"module":  {"list": 2, "load": -3, "loadex": -3, "unload": 3},
	"cluster": {"reset": -2},
}

// serverCommandFromScript is the reply to a script's call of a command
// the state machine does not have.
func serverCommandFromScript(args [][]byte) resp.Reply {
	name := strings.ToLower(string(args[0]))
	arity, ok := serverNoScript[name]
	if !ok {
		subs, container := serverNoScriptSub[name]
		if !container {
			return resp.Err(msgScriptUnknown)
		}
		arity = -2
		if len(args) > 1 {
			if arity, ok = subs[strings.ToLower(string(args[1]))]; !ok {
				return resp.Err(msgScriptUnknown)
			}
		}
	}
	if arity > 0 && len(args) != arity || arity < 0 && len(args) < -arity {
		return resp.Err(msgScriptArity)
	}
	return resp.Err(msgScriptDenied)
}
