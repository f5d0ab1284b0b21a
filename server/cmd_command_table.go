package server

import (
	"slices"
	"strings"
	"sync"

	"github.com/deadbolt/deadbolt/acl"
	"github.com/deadbolt/deadbolt/fsm"
	"github.com/deadbolt/deadbolt/resp"
)

// Redis's command table as COMMAND and the dispatcher read it: the rows
// (redisCommands, copied from Redis 7.0.15), their decoded form with
// subcommands (docs), and the lookups that name a subcommand or check its
// arity. cmd_command.go builds COMMAND's replies from it.

// cmdRow is one row of Redis's command table.
type cmdRow struct {
	name              string // lower case; "client|list" for a subcommand
	arity             int
	flags             string // Redis command flags, space separated
	first, last, step int
	acl               string // ACL categories without '@', space separated
	tips              string // space separated
	keys              string // key specs, see acl.ParseKeySpecs
	group, since      string
	summary           string
}

// cmdDoc is a row with its key specs decoded and its subcommands.
type cmdDoc struct {
	cmdRow
	specs []acl.KeySpec
	subs  []*cmdDoc // in name order
}

var (
	docsOnce  sync.Once
	docByName map[string]*cmdDoc
)

// docs returns Redis's command table by full name ("get", "client|list").
func docs() map[string]*cmdDoc {
	docsOnce.Do(func() {
		docByName = make(map[string]*cmdDoc, len(redisCommands))
		all := make([]cmdDoc, len(redisCommands))
		for i, row := range redisCommands {
			all[i] = cmdDoc{cmdRow: row, specs: acl.ParseKeySpecs(row.keys)}
			docByName[row.name] = &all[i]
		}
		for i := range all {
			d := &all[i]
			if parent, _, ok := strings.Cut(d.name, "|"); ok {
				if p := docByName[parent]; p != nil {
					p.subs = append(p.subs, d)
				}
			}
		}
		for _, d := range docByName {
			slices.SortFunc(d.subs, func(a, b *cmdDoc) int { return strings.Compare(a.name, b.name) })
		}
	})
	return docByName
}

// hasSubcommands reports whether name is a container command (CLIENT,
// CONFIG, ...) in Redis's table.
func hasSubcommands(name string) bool {
	d := docs()[name]
	return d != nil && len(d.subs) > 0
}

// fullName is a command's name as Redis reports it in errors, CLIENT LIST
// and INFO commandstats: "client|list" for a known subcommand.
func fullName(name string, args [][]byte) string {
	if len(args) < 2 || !hasSubcommands(name) || len(args[1]) > 32 {
		return name
	}
	sub := name + "|" + strings.ToLower(string(args[1]))
	if docs()[sub] != nil {
		return sub
	}
	return name
}

// checkSubcommand answers an unknown subcommand or a wrong number of
// arguments for a known one, as Redis's dispatcher does, and reports
// whether the command may go on. It returns the subcommand in lower case.
func checkSubcommand(c *conn, args [][]byte) (string, bool) {
	name := strings.ToLower(string(args[0]))
	sub := strings.ToLower(string(args[1]))
	d := docs()[name+"|"+sub]
	if d == nil || len(args[1]) > 64 {
		c.reply(unknownSubcommand(args))
		return "", false
	}
	if !arityOK(d.arity, len(args)) {
		c.reply(resp.Err(fsm.WrongArity(d.name)))
		return "", false
	}
	return sub, true
}

// subcommandSyntaxError is Redis's reply to a known subcommand used with
// arguments it does not take.
func subcommandSyntaxError(args [][]byte) resp.Reply {
	return resp.Err("ERR unknown subcommand or wrong number of arguments for '" + truncate(string(args[1]), 128) + "'. Try " + strings.ToUpper(string(args[0])) + " HELP.")
}

// redisCommands is Redis 7.0.15's command table (COMMAND INFO and COMMAND
// DOCS of redis-server 7.0.15) for the command groups deadbolt may
// implement: generic, string, hash, list, set, sorted-set, bitmap, pubsub,
// scripting (EVAL family), transactions, connection, server and cluster;
// plus the few later additions deadbolt answers (marked 7.2.0) and
// deadbolt's own commands (marked deadbolt). Rows for
// commands that no table registers are not shown to clients.
var redisCommands = []cmdRow{
	{"acl", -2, "", 0, 0, 0, "slow", "", "", "server", "6.0.0", "A container for Access List Control commands "},
	{"acl|cat", -2, "noscript loading stale", 0, 0, 0, "slow", "", "", "server", "6.0.0", "List the ACL categories or the commands inside a category"},
	{"acl|deluser", -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "6.0.0", "Remove the specified ACL users and the associated rules"},
	{"acl|dryrun", -4, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "7.0.0", "Returns whether the user can execute the given command without executing the command."},
	{"acl|genpass", -2, "noscript loading stale", 0, 0, 0, "slow", "", "", "server", "6.0.0", "Generate a pseudorandom secure password to use for ACL users"},
	{"acl|getuser", 3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "6.0.0", "Get the rules for a specific ACL user"},
	{"acl|help", 2, "loading stale", 0, 0, 0, "slow", "", "", "server", "6.0.0", "Show helpful text about the different subcommands"},
	{"acl|list", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "6.0.0", "List the current ACL rules in ACL config file format"},
	{"acl|load", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "6.0.0", "Reload the ACLs from the configured ACL file"},
	{"acl|log", -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "6.0.0", "List latest events denied because of ACLs in place"},
	{"acl|save", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "6.0.0", "Save the current ACL rules in the configured ACL file"},
	{"acl|setuser", -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "6.0.0", "Modify or create the rules for a specific ACL user"},
	{"acl|users", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "6.0.0", "List the username of all the configured ACL rules"},
	{"acl|whoami", 2, "noscript loading stale", 0, 0, 0, "slow", "", "", "server", "6.0.0", "Return the name of the user associated to the current connection"},
	{"append", 3, "write denyoom fast", 1, 1, 1, "write string fast", "", "RW insert|i1|r0,1,0", "string", "2.0.0", "Append a value to a key"},
	{"asking", 1, "fast", 0, 0, 0, "fast connection", "", "", "cluster", "3.0.0", "Sent by cluster clients after an -ASK redirect"},
	{"auth", -2, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "fast connection", "", "", "connection", "1.0.0", "Authenticate to the server"},
	{"bgrewriteaof", 1, "admin noscript no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "server", "1.0.0", "Asynchronously rewrite the append-only file"},
	{"bgsave", -1, "admin noscript no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "server", "1.0.0", "Asynchronously save the dataset to disk"},
	{"bitcount", -2, "readonly", 1, 1, 1, "read bitmap slow", "", "RO access|i1|r0,1,0", "bitmap", "2.6.0", "Count set bits in a string"},
	{"bitfield", -2, "write denyoom", 1, 1, 1, "write bitmap slow", "", "RW access update variable_flags|i1|r0,1,0|This command allows both access and modification of the key", "bitmap", "3.2.0", "Perform arbitrary bitfield integer operations on strings"},
	{"bitfield_ro", -2, "readonly fast", 1, 1, 1, "read bitmap fast", "", "RO access|i1|r0,1,0", "bitmap", "6.0.0", "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD"},
	{"bitop", -4, "write denyoom", 2, -1, 1, "write bitmap slow", "", "OW update|i2|r0,1,0;RO access|i3|r-1,1,0", "bitmap", "2.6.0", "Perform bitwise operations between strings"},
	{"bitpos", -3, "readonly", 1, 1, 1, "read bitmap slow", "", "RO access|i1|r0,1,0", "bitmap", "2.8.7", "Find first bit set or clear in a string"},
	{"blmove", 6, "write denyoom noscript blocking", 1, 2, 1, "write list slow blocking", "", "RW access delete|i1|r0,1,0;RW insert|i2|r0,1,0", "list", "6.2.0", "Pop an element from a list, push it to another list and return it; or block until one is available"},
	{"blmpop", -5, "write blocking movablekeys", 0, 0, 0, "write list slow blocking", "", "RW access delete|i2|n0,1,1", "list", "7.0.0", "Pop elements from a list, or block until one is available"},
	{"blpop", -3, "write noscript blocking", 1, -2, 1, "write list slow blocking", "", "RW access delete|i1|r-2,1,0", "list", "2.0.0", "Remove and get the first element in a list, or block until one is available"},
	{"brpop", -3, "write noscript blocking", 1, -2, 1, "write list slow blocking", "", "RW access delete|i1|r-2,1,0", "list", "2.0.0", "Remove and get the last element in a list, or block until one is available"},
	{"brpoplpush", 4, "write denyoom noscript blocking", 1, 2, 1, "write list slow blocking", "", "RW access delete|i1|r0,1,0;RW insert|i2|r0,1,0", "list", "2.2.0", "Pop an element from a list, push it to another list and return it; or block until one is available"},
	{"bzmpop", -5, "write blocking movablekeys", 0, 0, 0, "write sortedset slow blocking", "", "RW access delete|i2|n0,1,1", "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set or block until one is available"},
	{"bzpopmax", -3, "write noscript blocking fast", 1, -2, 1, "write sortedset fast blocking", "", "RW access delete|i1|r-2,1,0", "sorted-set", "5.0.0", "Remove and return the member with the highest score from one or more sorted sets, or block until one is available"},
	{"bzpopmin", -3, "write noscript blocking fast", 1, -2, 1, "write sortedset fast blocking", "", "RW access delete|i1|r-2,1,0", "sorted-set", "5.0.0", "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available"},
	{"client", -2, "", 0, 0, 0, "slow", "", "", "connection", "2.4.0", "A container for client connection commands"},
	{"client|caching", 3, "noscript loading stale", 0, 0, 0, "slow connection", "", "", "connection", "6.0.0", "Instruct the server about tracking or not keys in the next request"},
	{"client|getname", 2, "noscript loading stale", 0, 0, 0, "slow connection", "", "", "connection", "2.6.9", "Get the current connection name"},
	{"client|getredir", 2, "noscript loading stale", 0, 0, 0, "slow connection", "", "", "connection", "6.0.0", "Get tracking notifications redirection client ID if any"},
	{"client|help", 2, "loading stale", 0, 0, 0, "slow connection", "", "", "connection", "5.0.0", "Show helpful text about the different subcommands"},
	{"client|id", 2, "noscript loading stale", 0, 0, 0, "slow connection", "", "", "connection", "5.0.0", "Returns the client ID for the current connection"},
	{"client|info", 2, "noscript loading stale", 0, 0, 0, "slow connection", "nondeterministic_output", "", "connection", "6.2.0", "Returns information about the current client connection."},
	{"client|kill", -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection", "", "", "connection", "2.4.0", "Kill the connection of a client"},
	{"client|list", -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection", "nondeterministic_output", "", "connection", "2.4.0", "Get the list of client connections"},
	{"client|no-evict", 3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection", "", "", "connection", "7.0.0", "Set client eviction mode for the current connection"},
	{"client|pause", -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection", "", "", "connection", "2.9.50", "Stop processing commands from clients for some time"},
	{"client|reply", 3, "noscript loading stale", 0, 0, 0, "slow connection", "", "", "connection", "3.2.0", "Instruct the server whether to reply to commands"},
	{"client|setname", 3, "noscript loading stale", 0, 0, 0, "slow connection", "", "", "connection", "2.6.9", "Set the current connection name"},
	{"client|tracking", -3, "noscript loading stale", 0, 0, 0, "slow connection", "", "", "connection", "6.0.0", "Enable or disable server assisted client side caching support"},
	{"client|trackinginfo", 2, "noscript loading stale", 0, 0, 0, "slow connection", "", "", "connection", "6.2.0", "Return information about server assisted client side caching for the current connection"},
	{"client|unblock", -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection", "", "", "connection", "5.0.0", "Unblock a client blocked in a blocking command from a different connection"},
	{"client|unpause", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous connection", "", "", "connection", "6.2.0", "Resume processing of clients that were paused"},
	{"cluster", -2, "", 0, 0, 0, "slow", "", "", "cluster", "3.0.0", "A container for cluster commands"},
	{"cluster|addslots", -3, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Assign new hash slots to receiving node"},
	{"cluster|addslotsrange", -4, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "7.0.0", "Assign new hash slots to receiving node"},
	{"cluster|bumpepoch", 2, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "nondeterministic_output", "", "cluster", "3.0.0", "Advance the cluster config epoch"},
	{"cluster|count-failure-reports", 3, "admin stale", 0, 0, 0, "admin slow dangerous", "nondeterministic_output", "", "cluster", "3.0.0", "Return the number of failure reports active for a given node"},
	{"cluster|countkeysinslot", 3, "stale", 0, 0, 0, "slow", "", "", "cluster", "3.0.0", "Return the number of local keys in the specified hash slot"},
	{"cluster|delslots", -3, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Set hash slots as unbound in receiving node"},
	{"cluster|delslotsrange", -4, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "7.0.0", "Set hash slots as unbound in receiving node"},
	{"cluster|failover", -2, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Forces a replica to perform a manual failover of its master."},
	{"cluster|flushslots", 2, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Delete a node's own slots information"},
	{"cluster|forget", 3, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Remove a node from the nodes table"},
	{"cluster|getkeysinslot", 4, "stale", 0, 0, 0, "slow", "nondeterministic_output", "", "cluster", "3.0.0", "Return local key names in the specified hash slot"},
	{"cluster|help", 2, "loading stale", 0, 0, 0, "slow", "", "", "cluster", "5.0.0", "Show helpful text about the different subcommands"},
	{"cluster|info", 2, "stale", 0, 0, 0, "slow", "nondeterministic_output", "", "cluster", "3.0.0", "Provides info about Redis Cluster node state"},
	{"cluster|keyslot", 3, "stale", 0, 0, 0, "slow", "", "", "cluster", "3.0.0", "Returns the hash slot of the specified key"},
	{"cluster|links", 2, "stale", 0, 0, 0, "slow", "nondeterministic_output", "", "cluster", "7.0.0", "Returns a list of all TCP links to and from peer nodes in cluster"},
	{"cluster|meet", -4, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Force a node cluster to handshake with another node"},
	{"cluster|myid", 2, "stale", 0, 0, 0, "slow", "", "", "cluster", "3.0.0", "Return the node id"},
	{"cluster|nodes", 2, "stale", 0, 0, 0, "slow", "nondeterministic_output", "", "cluster", "3.0.0", "Get Cluster config for the node"},
	{"cluster|replicas", 3, "admin stale", 0, 0, 0, "admin slow dangerous", "nondeterministic_output", "", "cluster", "5.0.0", "List replica nodes of the specified master node"},
	{"cluster|replicate", 3, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Reconfigure a node as a replica of the specified master node"},
	{"cluster|reset", -2, "admin noscript stale", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Reset a Redis Cluster node"},
	{"cluster|saveconfig", 2, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Forces the node to save cluster state on disk"},
	{"cluster|set-config-epoch", 3, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Set the configuration epoch in a new node"},
	{"cluster|setslot", -4, "admin stale no_async_loading", 0, 0, 0, "admin slow dangerous", "", "", "cluster", "3.0.0", "Bind a hash slot to a specific node"},
	{"cluster|shards", 2, "stale", 0, 0, 0, "slow", "nondeterministic_output", "", "cluster", "7.0.0", "Get array of cluster slots to node mappings"},
	{"cluster|slaves", 3, "admin stale", 0, 0, 0, "admin slow dangerous", "nondeterministic_output", "", "cluster", "3.0.0", "List replica nodes of the specified master node"},
	{"cluster|slots", 2, "stale", 0, 0, 0, "slow", "nondeterministic_output", "", "cluster", "3.0.0", "Get array of Cluster slot to node mappings"},
	{"command", -1, "loading stale", 0, 0, 0, "slow connection", "nondeterministic_output_order", "", "server", "2.8.13", "Get array of Redis command details"},
	{"command|count", 2, "loading stale", 0, 0, 0, "slow connection", "", "", "server", "2.8.13", "Get total number of Redis commands"},
	{"command|docs", -2, "loading stale", 0, 0, 0, "slow connection", "nondeterministic_output_order", "", "server", "7.0.0", "Get array of specific Redis command documentation"},
	{"command|getkeys", -4, "loading stale", 0, 0, 0, "slow connection", "", "", "server", "2.8.13", "Extract keys given a full Redis command"},
	{"command|getkeysandflags", -4, "loading stale", 0, 0, 0, "slow connection", "", "", "server", "7.0.0", "Extract keys and access flags given a full Redis command"},
	{"command|help", 2, "loading stale", 0, 0, 0, "slow connection", "", "", "server", "5.0.0", "Show helpful text about the different subcommands"},
	{"command|info", -2, "loading stale", 0, 0, 0, "slow connection", "nondeterministic_output_order", "", "server", "2.8.13", "Get array of specific Redis command details, or all when no argument is given."},
	{"command|list", -2, "loading stale", 0, 0, 0, "slow connection", "nondeterministic_output_order", "", "server", "7.0.0", "Get an array of Redis command names"},
	{"config", -2, "", 0, 0, 0, "slow", "", "", "server", "2.0.0", "A container for server configuration commands"},
	{"config|get", -3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "2.0.0", "Get the values of configuration parameters"},
	{"config|help", 2, "loading stale", 0, 0, 0, "slow", "", "", "server", "5.0.0", "Show helpful text about the different subcommands"},
	{"config|resetstat", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "2.0.0", "Reset the stats returned by INFO"},
	{"config|rewrite", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "2.8.0", "Rewrite the configuration file with the in memory configuration"},
	{"config|set", -4, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "request_policy:all_nodes response_policy:all_succeeded", "", "server", "2.0.0", "Set configuration parameters to the given values"},
	{"copy", -3, "write denyoom", 1, 2, 1, "keyspace write slow", "", "RO access|i1|r0,1,0;OW update|i2|r0,1,0", "generic", "6.2.0", "Copy a key"},
	{"dbsize", 1, "readonly fast", 0, 0, 0, "keyspace read fast", "request_policy:all_shards response_policy:agg_sum", "", "server", "1.0.0", "Return the number of keys in the selected database"},
	{"debug", -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "1.0.0", "A container for debugging commands"},
	{"decr", 2, "write denyoom fast", 1, 1, 1, "write string fast", "", "RW access update|i1|r0,1,0", "string", "1.0.0", "Decrement the integer value of a key by one"},
	{"decrby", 3, "write denyoom fast", 1, 1, 1, "write string fast", "", "RW access update|i1|r0,1,0", "string", "1.0.0", "Decrement the integer value of a key by the given number"},
	{"del", -2, "write", 1, -1, 1, "keyspace write slow", "request_policy:multi_shard response_policy:agg_sum", "RM delete|i1|r-1,1,0", "generic", "1.0.0", "Delete a key"},
	{"discard", 1, "noscript loading stale fast allow_busy", 0, 0, 0, "fast transaction", "", "", "transactions", "2.0.0", "Discard all commands issued after MULTI"},
	{"echo", 2, "loading stale fast", 0, 0, 0, "fast connection", "", "", "connection", "1.0.0", "Echo the given string"},
	{"eval", -3, "noscript stale skip_monitor no_mandatory_keys movablekeys", 0, 0, 0, "slow scripting", "", "RW access update|i2|n0,1,1|We cannot tell how the keys will be used so we assume the worst, RW and UPDATE", "scripting", "2.6.0", "Execute a Lua script server side"},
	{"eval_ro", -3, "readonly noscript stale skip_monitor no_mandatory_keys movablekeys", 0, 0, 0, "slow scripting", "", "RO access|i2|n0,1,1|We cannot tell how the keys will be used so we assume the worst, RO and ACCESS", "scripting", "7.0.0", "Execute a read-only Lua script server side"},
	{"fcall", -3, "noscript stale skip_monitor no_mandatory_keys movablekeys", 0, 0, 0, "slow scripting", "", "RW access update|i2|n0,1,1|We cannot tell how the keys will be used so we assume the worst, RW and UPDATE", "scripting", "7.0.0", "Invoke a function"},
	{"fcall_ro", -3, "readonly noscript stale skip_monitor no_mandatory_keys movablekeys", 0, 0, 0, "slow scripting", "", "RO access|i2|n0,1,1|We cannot tell how the keys will be used so we assume the worst, RO and ACCESS", "scripting", "7.0.0", "Invoke a read-only function"},
	{"function", -2, "", 0, 0, 0, "slow", "", "", "scripting", "7.0.0", "A container for function commands"},
	{"function|delete", 3, "write noscript", 0, 0, 0, "write slow scripting", "request_policy:all_shards response_policy:all_succeeded", "", "scripting", "7.0.0", "Delete a function by name"},
	{"function|dump", 2, "noscript", 0, 0, 0, "slow scripting", "", "", "scripting", "7.0.0", "Dump all functions into a serialized binary payload"},
	{"function|flush", -2, "write noscript", 0, 0, 0, "write slow scripting", "request_policy:all_shards response_policy:all_succeeded", "", "scripting", "7.0.0", "Deleting all functions"},
	{"function|help", 2, "loading stale", 0, 0, 0, "slow scripting", "", "", "scripting", "7.0.0", "Show helpful text about the different subcommands"},
	{"function|kill", 2, "noscript allow_busy", 0, 0, 0, "slow scripting", "request_policy:all_shards response_policy:one_succeeded", "", "scripting", "7.0.0", "Kill the function currently in execution."},
	{"function|list", -2, "noscript", 0, 0, 0, "slow scripting", "nondeterministic_output_order", "", "scripting", "7.0.0", "List information about all the functions"},
	{"function|load", -3, "write denyoom noscript", 0, 0, 0, "write slow scripting", "request_policy:all_shards response_policy:all_succeeded", "", "scripting", "7.0.0", "Create a function with the given arguments (name, code, description)"},
	{"function|restore", -3, "write denyoom noscript", 0, 0, 0, "write slow scripting", "request_policy:all_shards response_policy:all_succeeded", "", "scripting", "7.0.0", "Restore all the functions on the given payload"},
	{"function|stats", 2, "noscript allow_busy", 0, 0, 0, "slow scripting", "nondeterministic_output request_policy:all_shards response_policy:special", "", "scripting", "7.0.0", "Return information about the function currently running (name, description, duration)"},
	{"evalsha", -3, "noscript stale skip_monitor no_mandatory_keys movablekeys", 0, 0, 0, "slow scripting", "", "RW access update|i2|n0,1,1", "scripting", "2.6.0", "Execute a Lua script server side"},
	{"evalsha_ro", -3, "readonly noscript stale skip_monitor no_mandatory_keys movablekeys", 0, 0, 0, "slow scripting", "", "RO access|i2|n0,1,1", "scripting", "7.0.0", "Execute a read-only Lua script server side"},
	{"exec", 1, "noscript loading stale skip_slowlog", 0, 0, 0, "slow transaction", "", "", "transactions", "1.2.0", "Execute all commands issued after MULTI"},
	{"exists", -2, "readonly fast", 1, -1, 1, "keyspace read fast", "request_policy:multi_shard response_policy:agg_sum", "RO|i1|r-1,1,0", "generic", "1.0.0", "Determine if a key exists"},
	{"expire", -3, "write fast", 1, 1, 1, "keyspace write fast", "", "RW update|i1|r0,1,0", "generic", "1.0.0", "Set a key's time to live in seconds"},
	{"expireat", -3, "write fast", 1, 1, 1, "keyspace write fast", "", "RW update|i1|r0,1,0", "generic", "1.2.0", "Set the expiration for a key as a UNIX timestamp"},
	{"expiretime", 2, "readonly fast", 1, 1, 1, "keyspace read fast", "", "RO access|i1|r0,1,0", "generic", "7.0.0", "Get the expiration Unix timestamp for a key"},
	{"flushall", -1, "write", 0, 0, 0, "keyspace write slow dangerous", "request_policy:all_shards response_policy:all_succeeded", "", "server", "1.0.0", "Remove all keys from all databases"},
	{"flushdb", -1, "write", 0, 0, 0, "keyspace write slow dangerous", "request_policy:all_shards response_policy:all_succeeded", "", "server", "1.0.0", "Remove all keys from the current database"},
	{"get", 2, "readonly fast", 1, 1, 1, "read string fast", "", "RO access|i1|r0,1,0", "string", "1.0.0", "Get the value of a key"},
	{"getbit", 3, "readonly fast", 1, 1, 1, "read bitmap fast", "", "RO access|i1|r0,1,0", "bitmap", "2.2.0", "Returns the bit value at offset in the string value stored at key"},
	{"getdel", 2, "write fast", 1, 1, 1, "write string fast", "", "RW access delete|i1|r0,1,0", "string", "6.2.0", "Get the value of a key and delete the key"},
	{"getex", -2, "write fast", 1, 1, 1, "write string fast", "", "RW access update|i1|r0,1,0|RW and UPDATE because it changes the TTL", "string", "6.2.0", "Get the value of a key and optionally set its expiration"},
	{"getrange", 4, "readonly", 1, 1, 1, "read string slow", "", "RO access|i1|r0,1,0", "string", "2.4.0", "Get a substring of the string stored at a key"},
	{"getset", 3, "write denyoom fast", 1, 1, 1, "write string fast", "", "RW access update|i1|r0,1,0", "string", "1.0.0", "Set the string value of a key and return its old value"},
	{"hdel", -3, "write fast", 1, 1, 1, "write hash fast", "", "RW delete|i1|r0,1,0", "hash", "2.0.0", "Delete one or more hash fields"},
	{"hello", -1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "fast connection", "", "", "connection", "6.0.0", "Handshake with Redis"},
	{"hexists", 3, "readonly fast", 1, 1, 1, "read hash fast", "", "RO|i1|r0,1,0", "hash", "2.0.0", "Determine if a hash field exists"},
	{"hget", 3, "readonly fast", 1, 1, 1, "read hash fast", "", "RO access|i1|r0,1,0", "hash", "2.0.0", "Get the value of a hash field"},
	{"hgetall", 2, "readonly", 1, 1, 1, "read hash slow", "nondeterministic_output_order", "RO access|i1|r0,1,0", "hash", "2.0.0", "Get all the fields and values in a hash"},
	{"hincrby", 4, "write denyoom fast", 1, 1, 1, "write hash fast", "", "RW access update|i1|r0,1,0", "hash", "2.0.0", "Increment the integer value of a hash field by the given number"},
	{"hincrbyfloat", 4, "write denyoom fast", 1, 1, 1, "write hash fast", "", "RW access update|i1|r0,1,0", "hash", "2.6.0", "Increment the float value of a hash field by the given amount"},
	{"hkeys", 2, "readonly", 1, 1, 1, "read hash slow", "nondeterministic_output_order", "RO access|i1|r0,1,0", "hash", "2.0.0", "Get all the fields in a hash"},
	{"hlen", 2, "readonly fast", 1, 1, 1, "read hash fast", "", "RO|i1|r0,1,0", "hash", "2.0.0", "Get the number of fields in a hash"},
	{"hmget", -3, "readonly fast", 1, 1, 1, "read hash fast", "", "RO access|i1|r0,1,0", "hash", "2.0.0", "Get the values of all the given hash fields"},
	{"hmset", -4, "write denyoom fast", 1, 1, 1, "write hash fast", "", "RW update|i1|r0,1,0", "hash", "2.0.0", "Set multiple hash fields to multiple values"},
	{"hrandfield", -2, "readonly", 1, 1, 1, "read hash slow", "nondeterministic_output", "RO access|i1|r0,1,0", "hash", "6.2.0", "Get one or multiple random fields from a hash"},
	{"hscan", -3, "readonly", 1, 1, 1, "read hash slow", "nondeterministic_output", "RO access|i1|r0,1,0", "hash", "2.8.0", "Incrementally iterate hash fields and associated values"},
	{"hset", -4, "write denyoom fast", 1, 1, 1, "write hash fast", "", "RW update|i1|r0,1,0", "hash", "2.0.0", "Set the string value of a hash field"},
	{"hsetnx", 4, "write denyoom fast", 1, 1, 1, "write hash fast", "", "RW insert|i1|r0,1,0", "hash", "2.0.0", "Set the value of a hash field, only if the field does not exist"},
	{"hstrlen", 3, "readonly fast", 1, 1, 1, "read hash fast", "", "RO|i1|r0,1,0", "hash", "3.2.0", "Get the length of the value of a hash field"},
	{"hvals", 2, "readonly", 1, 1, 1, "read hash slow", "nondeterministic_output_order", "RO access|i1|r0,1,0", "hash", "2.0.0", "Get all the values in a hash"},
	{"incr", 2, "write denyoom fast", 1, 1, 1, "write string fast", "", "RW access update|i1|r0,1,0", "string", "1.0.0", "Increment the integer value of a key by one"},
	{"incrby", 3, "write denyoom fast", 1, 1, 1, "write string fast", "", "RW access update|i1|r0,1,0", "string", "1.0.0", "Increment the integer value of a key by the given amount"},
	{"incrbyfloat", 3, "write denyoom fast", 1, 1, 1, "write string fast", "", "RW access update|i1|r0,1,0", "string", "2.6.0", "Increment the float value of a key by the given amount"},
	{"info", -1, "loading stale", 0, 0, 0, "slow dangerous", "nondeterministic_output request_policy:all_shards response_policy:special", "", "server", "1.0.0", "Get information and statistics about the server"},
	{"keys", 2, "readonly", 0, 0, 0, "keyspace read slow dangerous", "request_policy:all_shards nondeterministic_output_order", "", "generic", "1.0.0", "Find all keys matching the given pattern"},
	{"lastsave", 1, "loading stale fast", 0, 0, 0, "admin fast dangerous", "nondeterministic_output", "", "server", "1.0.0", "Get the UNIX time stamp of the last successful save to disk"},
	{"latency", -2, "", 0, 0, 0, "slow", "", "", "server", "2.8.13", "A container for latency diagnostics commands"},
	{"latency|doctor", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "nondeterministic_output request_policy:all_nodes response_policy:special", "", "server", "2.8.13", "Return a human readable latency analysis report."},
	{"latency|graph", 3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "nondeterministic_output request_policy:all_nodes response_policy:special", "", "server", "2.8.13", "Return a latency graph for the event."},
	{"latency|help", 2, "loading stale", 0, 0, 0, "slow", "", "", "server", "2.8.13", "Show helpful text about the different subcommands."},
	{"latency|histogram", -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "nondeterministic_output request_policy:all_nodes response_policy:special", "", "server", "7.0.0", "Return the cumulative distribution of latencies of a subset of commands or all."},
	{"latency|history", 3, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "nondeterministic_output request_policy:all_nodes response_policy:special", "", "server", "2.8.13", "Return timestamp-latency samples for the event."},
	{"latency|latest", 2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "nondeterministic_output request_policy:all_nodes response_policy:special", "", "server", "2.8.13", "Return the latest latency samples for all events."},
	{"latency|reset", -2, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "request_policy:all_nodes response_policy:all_succeeded", "", "server", "2.8.13", "Reset latency data for one or more events."},
	{"lcs", -3, "readonly", 1, 2, 1, "read string slow", "", "RO access|i1|r1,1,0", "string", "7.0.0", "Find longest common substring"},
	{"lindex", 3, "readonly", 1, 1, 1, "read list slow", "", "RO access|i1|r0,1,0", "list", "1.0.0", "Get an element from a list by its index"},
	{"linsert", 5, "write denyoom", 1, 1, 1, "write list slow", "", "RW insert|i1|r0,1,0", "list", "2.2.0", "Insert an element before or after another element in a list"},
	{"llen", 2, "readonly fast", 1, 1, 1, "read list fast", "", "RO|i1|r0,1,0", "list", "1.0.0", "Get the length of a list"},
	{"lmove", 5, "write denyoom", 1, 2, 1, "write list slow", "", "RW access delete|i1|r0,1,0;RW insert|i2|r0,1,0", "list", "6.2.0", "Pop an element from a list, push it to another list and return it"},
	{"lmpop", -4, "write movablekeys", 0, 0, 0, "write list slow", "", "RW access delete|i1|n0,1,1", "list", "7.0.0", "Pop elements from a list"},
	{"lolwut", -1, "readonly fast", 0, 0, 0, "read fast", "", "", "server", "5.0.0", "Display some computer art and the Redis version"},
	{"lpop", -2, "write fast", 1, 1, 1, "write list fast", "", "RW access delete|i1|r0,1,0", "list", "1.0.0", "Remove and get the first elements in a list"},
	{"lpos", -3, "readonly", 1, 1, 1, "read list slow", "", "RO access|i1|r0,1,0", "list", "6.0.6", "Return the index of matching elements on a list"},
	{"lpush", -3, "write denyoom fast", 1, 1, 1, "write list fast", "", "RW insert|i1|r0,1,0", "list", "1.0.0", "Prepend one or multiple elements to a list"},
	{"lpushx", -3, "write denyoom fast", 1, 1, 1, "write list fast", "", "RW insert|i1|r0,1,0", "list", "2.2.0", "Prepend an element to a list, only if the list exists"},
	{"lrange", 4, "readonly", 1, 1, 1, "read list slow", "", "RO access|i1|r0,1,0", "list", "1.0.0", "Get a range of elements from a list"},
	{"lrem", 4, "write", 1, 1, 1, "write list slow", "", "RW delete|i1|r0,1,0", "list", "1.0.0", "Remove elements from a list"},
	{"lset", 4, "write denyoom", 1, 1, 1, "write list slow", "", "RW update|i1|r0,1,0", "list", "1.0.0", "Set the value of an element in a list by its index"},
	{"ltrim", 4, "write", 1, 1, 1, "write list slow", "", "RW delete|i1|r0,1,0", "list", "1.0.0", "Trim a list to the specified range"},
	{"memory", -2, "", 0, 0, 0, "slow", "", "", "server", "4.0.0", "A container for memory diagnostics commands"},
	{"memory|doctor", 2, "", 0, 0, 0, "slow", "nondeterministic_output request_policy:all_shards response_policy:special", "", "server", "4.0.0", "Outputs memory problems report"},
	{"memory|help", 2, "loading stale", 0, 0, 0, "slow", "", "", "server", "4.0.0", "Show helpful text about the different subcommands"},
	{"memory|malloc-stats", 2, "", 0, 0, 0, "slow", "nondeterministic_output request_policy:all_shards response_policy:special", "", "server", "4.0.0", "Show allocator internal stats"},
	{"memory|purge", 2, "", 0, 0, 0, "slow", "request_policy:all_shards response_policy:all_succeeded", "", "server", "4.0.0", "Ask the allocator to release memory"},
	{"memory|stats", 2, "", 0, 0, 0, "slow", "nondeterministic_output request_policy:all_shards response_policy:special", "", "server", "4.0.0", "Show memory usage details"},
	{"memory|usage", -3, "readonly", 2, 2, 1, "read slow", "", "RO|i2|r0,1,0", "server", "4.0.0", "Estimate the memory usage of a key"},
	{"mget", -2, "readonly fast", 1, -1, 1, "read string fast", "request_policy:multi_shard", "RO access|i1|r-1,1,0", "string", "1.0.0", "Get the values of all the given keys"},
	{"monitor", 1, "admin noscript loading stale", 0, 0, 0, "admin slow dangerous", "", "", "server", "1.0.0", "Listen for all requests received by the server in real time"},
	{"move", 3, "write fast", 1, 1, 1, "keyspace write fast", "", "RW access update|i1|r0,1,0", "generic", "1.0.0", "Move a key to another database"},
	{"mset", -3, "write denyoom", 1, -1, 2, "write string slow", "request_policy:multi_shard response_policy:all_succeeded", "OW update|i1|r-1,2,0", "string", "1.0.1", "Set multiple keys to multiple values"},
	{"msetnx", -3, "write denyoom", 1, -1, 2, "write string slow", "request_policy:multi_shard response_policy:agg_min", "OW insert|i1|r-1,2,0", "string", "1.0.1", "Set multiple keys to multiple values, only if none of the keys exist"},
	{"multi", 1, "noscript loading stale fast allow_busy", 0, 0, 0, "fast transaction", "", "", "transactions", "1.2.0", "Mark the start of a transaction block"},
	{"object", -2, "", 0, 0, 0, "slow", "", "", "generic", "2.2.3", "A container for object introspection commands"},
	{"object|encoding", 3, "readonly", 2, 2, 1, "keyspace read slow", "nondeterministic_output", "RO|i2|r0,1,0", "generic", "2.2.3", "Inspect the internal encoding of a Redis object"},
	{"object|freq", 3, "readonly", 2, 2, 1, "keyspace read slow", "nondeterministic_output", "RO|i2|r0,1,0", "generic", "4.0.0", "Get the logarithmic access frequency counter of a Redis object"},
	{"object|help", 2, "loading stale", 0, 0, 0, "keyspace slow", "", "", "generic", "6.2.0", "Show helpful text about the different subcommands"},
	{"object|idletime", 3, "readonly", 2, 2, 1, "keyspace read slow", "nondeterministic_output", "RO|i2|r0,1,0", "generic", "2.2.3", "Get the time since a Redis object was last accessed"},
	{"object|refcount", 3, "readonly", 2, 2, 1, "keyspace read slow", "nondeterministic_output", "RO|i2|r0,1,0", "generic", "2.2.3", "Get the number of references to the value of the key"},
	{"persist", 2, "write fast", 1, 1, 1, "keyspace write fast", "", "RW update|i1|r0,1,0", "generic", "2.2.0", "Remove the expiration from a key"},
	{"pexpire", -3, "write fast", 1, 1, 1, "keyspace write fast", "", "RW update|i1|r0,1,0", "generic", "2.6.0", "Set a key's time to live in milliseconds"},
	{"pexpireat", -3, "write fast", 1, 1, 1, "keyspace write fast", "", "RW update|i1|r0,1,0", "generic", "2.6.0", "Set the expiration for a key as a UNIX timestamp specified in milliseconds"},
	{"pexpiretime", 2, "readonly fast", 1, 1, 1, "keyspace read fast", "", "RO access|i1|r0,1,0", "generic", "7.0.0", "Get the expiration Unix timestamp for a key in milliseconds"},
	{"ping", -1, "fast", 0, 0, 0, "fast connection", "request_policy:all_shards response_policy:all_succeeded", "", "connection", "1.0.0", "Ping the server"},
	{"psetex", 4, "write denyoom", 1, 1, 1, "write string slow", "", "OW update|i1|r0,1,0", "string", "2.6.0", "Set the value and expiration in milliseconds of a key"},
	{"psubscribe", -2, "pubsub noscript loading stale", 0, 0, 0, "pubsub slow", "", "", "pubsub", "2.0.0", "Listen for messages published to channels matching the given patterns"},
	{"pttl", 2, "readonly fast", 1, 1, 1, "keyspace read fast", "nondeterministic_output", "RO access|i1|r0,1,0", "generic", "2.6.0", "Get the time to live for a key in milliseconds"},
	{"publish", 3, "pubsub loading stale fast", 0, 0, 0, "pubsub fast", "", "", "pubsub", "2.0.0", "Post a message to a channel"},
	{"pubsub", -2, "", 0, 0, 0, "slow", "", "", "pubsub", "2.8.0", "A container for Pub/Sub commands"},
	{"pubsub|channels", -2, "pubsub loading stale", 0, 0, 0, "pubsub slow", "", "", "pubsub", "2.8.0", "List active channels"},
	{"pubsub|help", 2, "loading stale", 0, 0, 0, "slow", "", "", "pubsub", "6.2.0", "Show helpful text about the different subcommands"},
	{"pubsub|numpat", 2, "pubsub loading stale", 0, 0, 0, "pubsub slow", "", "", "pubsub", "2.8.0", "Get the count of unique patterns pattern subscriptions"},
	{"pubsub|numsub", -2, "pubsub loading stale", 0, 0, 0, "pubsub slow", "", "", "pubsub", "2.8.0", "Get the count of subscribers for channels"},
	{"pubsub|shardchannels", -2, "pubsub loading stale", 0, 0, 0, "pubsub slow", "", "", "pubsub", "7.0.0", "List active shard channels"},
	{"pubsub|shardnumsub", -2, "pubsub loading stale", 0, 0, 0, "pubsub slow", "", "", "pubsub", "7.0.0", "Get the count of subscribers for shard channels"},
	{"punsubscribe", -1, "pubsub noscript loading stale", 0, 0, 0, "pubsub slow", "", "", "pubsub", "2.0.0", "Stop listening for messages posted to channels matching the given patterns"},
	{"quit", -1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "fast connection", "", "", "connection", "1.0.0", "Close the connection"},
	{"randomkey", 1, "readonly", 0, 0, 0, "keyspace read slow", "request_policy:all_shards nondeterministic_output", "", "generic", "1.0.0", "Return a random key from the keyspace"},
	{"readonly", 1, "loading stale fast", 0, 0, 0, "fast connection", "", "", "cluster", "3.0.0", "Enables read queries for a connection to a cluster replica node"},
	{"readwrite", 1, "loading stale fast", 0, 0, 0, "fast connection", "", "", "cluster", "3.0.0", "Disables read queries for a connection to a cluster replica node"},
	{"rename", 3, "write", 1, 2, 1, "keyspace write slow", "", "RW access delete|i1|r0,1,0;OW update|i2|r0,1,0", "generic", "1.0.0", "Rename a key"},
	{"renamenx", 3, "write fast", 1, 2, 1, "keyspace write fast", "", "RW access delete|i1|r0,1,0;OW insert|i2|r0,1,0", "generic", "1.0.0", "Rename a key, only if the new key does not exist"},
	{"reset", 1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0, "fast connection", "", "", "connection", "6.2.0", "Reset the connection"},
	{"role", 1, "noscript loading stale fast", 0, 0, 0, "admin fast dangerous", "", "", "server", "2.8.12", "Return the role of the instance in the context of replication"},
	{"rpop", -2, "write fast", 1, 1, 1, "write list fast", "", "RW access delete|i1|r0,1,0", "list", "1.0.0", "Remove and get the last elements in a list"},
	{"rpoplpush", 3, "write denyoom", 1, 2, 1, "write list slow", "", "RW access delete|i1|r0,1,0;RW insert|i2|r0,1,0", "list", "1.2.0", "Remove the last element in a list, prepend it to another list and return it"},
	{"rpush", -3, "write denyoom fast", 1, 1, 1, "write list fast", "", "RW insert|i1|r0,1,0", "list", "1.0.0", "Append one or multiple elements to a list"},
	{"rpushx", -3, "write denyoom fast", 1, 1, 1, "write list fast", "", "RW insert|i1|r0,1,0", "list", "2.2.0", "Append an element to a list, only if the list exists"},
	{"sadd", -3, "write denyoom fast", 1, 1, 1, "write set fast", "", "RW insert|i1|r0,1,0", "set", "1.0.0", "Add one or more members to a set"},
	{"save", 1, "admin noscript no_async_loading no_multi", 0, 0, 0, "admin slow dangerous", "", "", "server", "1.0.0", "Synchronously save the dataset to disk"},
	{"scan", -2, "readonly", 0, 0, 0, "keyspace read slow", "nondeterministic_output request_policy:special", "", "generic", "2.8.0", "Incrementally iterate the keys space"},
	{"scard", 2, "readonly fast", 1, 1, 1, "read set fast", "", "RO|i1|r0,1,0", "set", "1.0.0", "Get the number of members in a set"},
	{"script", -2, "", 0, 0, 0, "slow", "", "", "scripting", "2.6.0", "A container for Lua scripts management commands"},
	{"script|debug", 3, "noscript", 0, 0, 0, "slow scripting", "", "", "scripting", "3.2.0", "Set the debug mode for executed scripts."},
	{"script|exists", -3, "noscript", 0, 0, 0, "slow scripting", "request_policy:all_shards response_policy:agg_logical_and", "", "scripting", "2.6.0", "Check existence of scripts in the script cache."},
	{"script|flush", -2, "noscript", 0, 0, 0, "slow scripting", "request_policy:all_nodes response_policy:all_succeeded", "", "scripting", "2.6.0", "Remove all the scripts from the script cache."},
	{"script|help", 2, "loading stale", 0, 0, 0, "slow scripting", "", "", "scripting", "5.0.0", "Show helpful text about the different subcommands"},
	{"script|kill", 2, "noscript allow_busy", 0, 0, 0, "slow scripting", "request_policy:all_shards response_policy:one_succeeded", "", "scripting", "2.6.0", "Kill the script currently in execution."},
	{"script|load", 3, "noscript stale", 0, 0, 0, "slow scripting", "request_policy:all_nodes response_policy:all_succeeded", "", "scripting", "2.6.0", "Load the specified Lua script into the script cache."},
	{"sdiff", -2, "readonly", 1, -1, 1, "read set slow", "nondeterministic_output_order", "RO access|i1|r-1,1,0", "set", "1.0.0", "Subtract multiple sets"},
	{"sdiffstore", -3, "write denyoom", 1, -1, 1, "write set slow", "", "OW update|i1|r0,1,0;RO access|i2|r-1,1,0", "set", "1.0.0", "Subtract multiple sets and store the resulting set in a key"},
	{"select", 2, "loading stale fast", 0, 0, 0, "fast connection", "", "", "connection", "1.0.0", "Change the selected database for the current connection"},
	{"set", -3, "write denyoom", 1, 1, 1, "write string slow", "", "RW access update variable_flags|i1|r0,1,0|RW and ACCESS due to the optional `GET` argument", "string", "1.0.0", "Set the string value of a key"},
	{"setbit", 4, "write denyoom", 1, 1, 1, "write bitmap slow", "", "RW access update|i1|r0,1,0", "bitmap", "2.2.0", "Sets or clears the bit at offset in the string value stored at key"},
	{"setex", 4, "write denyoom", 1, 1, 1, "write string slow", "", "OW update|i1|r0,1,0", "string", "2.0.0", "Set the value and expiration of a key"},
	{"setnx", 3, "write denyoom fast", 1, 1, 1, "write string fast", "", "OW insert|i1|r0,1,0", "string", "1.0.0", "Set the value of a key, only if the key does not exist"},
	{"setrange", 4, "write denyoom", 1, 1, 1, "write string slow", "", "RW update|i1|r0,1,0", "string", "2.2.0", "Overwrite part of a string at key starting at the specified offset"},
	{"shutdown", -1, "admin noscript loading stale no_multi allow_busy", 0, 0, 0, "admin slow dangerous", "", "", "server", "1.0.0", "Synchronously save the dataset to disk and then shut down the server"},
	{"sinter", -2, "readonly", 1, -1, 1, "read set slow", "nondeterministic_output_order", "RO access|i1|r-1,1,0", "set", "1.0.0", "Intersect multiple sets"},
	{"sintercard", -3, "readonly movablekeys", 0, 0, 0, "read set slow", "", "RO access|i1|n0,1,1", "set", "7.0.0", "Intersect multiple sets and return the cardinality of the result"},
	{"sinterstore", -3, "write denyoom", 1, -1, 1, "write set slow", "", "RW update|i1|r0,1,0;RO access|i2|r-1,1,0", "set", "1.0.0", "Intersect multiple sets and store the resulting set in a key"},
	{"sismember", 3, "readonly fast", 1, 1, 1, "read set fast", "", "RO|i1|r0,1,0", "set", "1.0.0", "Determine if a given value is a member of a set"},
	{"slowlog", -2, "", 0, 0, 0, "slow", "", "", "server", "2.2.12", "A container for slow log commands"},
	{"slowlog|get", -2, "admin loading stale", 0, 0, 0, "admin slow dangerous", "request_policy:all_nodes nondeterministic_output", "", "server", "2.2.12", "Get the slow log's entries"},
	{"slowlog|help", 2, "loading stale", 0, 0, 0, "slow", "", "", "server", "6.2.0", "Show helpful text about the different subcommands"},
	{"slowlog|len", 2, "admin loading stale", 0, 0, 0, "admin slow dangerous", "request_policy:all_nodes response_policy:agg_sum nondeterministic_output", "", "server", "2.2.12", "Get the slow log's length"},
	{"slowlog|reset", 2, "admin loading stale", 0, 0, 0, "admin slow dangerous", "request_policy:all_nodes response_policy:all_succeeded", "", "server", "2.2.12", "Clear all entries from the slow log"},
	{"smembers", 2, "readonly", 1, 1, 1, "read set slow", "nondeterministic_output_order", "RO access|i1|r0,1,0", "set", "1.0.0", "Get all the members in a set"},
	{"smismember", -3, "readonly fast", 1, 1, 1, "read set fast", "", "RO access|i1|r0,1,0", "set", "6.2.0", "Returns the membership associated with the given elements for a set"},
	{"smove", 4, "write fast", 1, 2, 1, "write set fast", "", "RW access delete|i1|r0,1,0;RW insert|i2|r0,1,0", "set", "1.0.0", "Move a member from one set to another"},
	{"sort", -2, "write denyoom movablekeys", 1, 1, 1, "write set sortedset list slow dangerous", "", "RO access|i1|r0,1,0;RO access|u|u|For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort;OW update|u|u|For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array", "generic", "1.0.0", "Sort the elements in a list, set or sorted set"},
	{"sort_ro", -2, "readonly movablekeys", 1, 1, 1, "read set sortedset list slow dangerous", "", "RO access|i1|r0,1,0;RO access|u|u|For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort", "generic", "7.0.0", "Sort the elements in a list, set or sorted set. Read-only variant of SORT."},
	{"spop", -2, "write fast", 1, 1, 1, "write set fast", "nondeterministic_output", "RW access delete|i1|r0,1,0", "set", "1.0.0", "Remove and return one or multiple random members from a set"},
	{"spublish", 3, "pubsub loading stale fast", 1, 1, 1, "pubsub fast", "", "not_key|i1|r0,1,0", "pubsub", "7.0.0", "Post a message to a shard channel"},
	{"srandmember", -2, "readonly", 1, 1, 1, "read set slow", "nondeterministic_output", "RO access|i1|r0,1,0", "set", "1.0.0", "Get one or multiple random members from a set"},
	{"srem", -3, "write fast", 1, 1, 1, "write set fast", "", "RW delete|i1|r0,1,0", "set", "1.0.0", "Remove one or more members from a set"},
	{"sscan", -3, "readonly", 1, 1, 1, "read set slow", "nondeterministic_output", "RO access|i1|r0,1,0", "set", "2.8.0", "Incrementally iterate Set elements"},
	{"ssubscribe", -2, "pubsub noscript loading stale", 1, -1, 1, "pubsub slow", "", "not_key|i1|r-1,1,0", "pubsub", "7.0.0", "Listen for messages published to the given shard channels"},
	{"strlen", 2, "readonly fast", 1, 1, 1, "read string fast", "", "RO|i1|r0,1,0", "string", "2.2.0", "Get the length of the value stored in a key"},
	{"subscribe", -2, "pubsub noscript loading stale", 0, 0, 0, "pubsub slow", "", "", "pubsub", "2.0.0", "Listen for messages published to the given channels"},
	{"substr", 4, "readonly", 1, 1, 1, "read string slow", "", "RO access|i1|r0,1,0", "string", "1.0.0", "Get a substring of the string stored at a key"},
	{"sunion", -2, "readonly", 1, -1, 1, "read set slow", "nondeterministic_output_order", "RO access|i1|r-1,1,0", "set", "1.0.0", "Add multiple sets"},
	{"sunionstore", -3, "write denyoom", 1, -1, 1, "write set slow", "", "OW update|i1|r0,1,0;RO access|i2|r-1,1,0", "set", "1.0.0", "Add multiple sets and store the resulting set in a key"},
	{"sunsubscribe", -1, "pubsub noscript loading stale", 1, -1, 1, "pubsub slow", "", "not_key|i1|r-1,1,0", "pubsub", "7.0.0", "Stop listening for messages posted to the given shard channels"},
	{"swapdb", 3, "write fast", 0, 0, 0, "keyspace write fast dangerous", "", "", "server", "4.0.0", "Swaps two Redis databases"},
	{"time", 1, "loading stale fast", 0, 0, 0, "fast", "nondeterministic_output", "", "server", "2.6.0", "Return the current server time"},
	{"touch", -2, "readonly fast", 1, -1, 1, "keyspace read fast", "request_policy:multi_shard response_policy:agg_sum", "RO|i1|r-1,1,0", "generic", "3.2.1", "Alters the last access time of a key(s). Returns the number of existing keys specified."},
	{"ttl", 2, "readonly fast", 1, 1, 1, "keyspace read fast", "nondeterministic_output", "RO access|i1|r0,1,0", "generic", "1.0.0", "Get the time to live for a key in seconds"},
	{"type", 2, "readonly fast", 1, 1, 1, "keyspace read fast", "", "RO|i1|r0,1,0", "generic", "1.0.0", "Determine the type stored at key"},
	{"unlink", -2, "write fast", 1, -1, 1, "keyspace write fast", "request_policy:multi_shard response_policy:agg_sum", "RM delete|i1|r-1,1,0", "generic", "4.0.0", "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking."},
	{"unsubscribe", -1, "pubsub noscript loading stale", 0, 0, 0, "pubsub slow", "", "", "pubsub", "2.0.0", "Stop listening for messages posted to the given channels"},
	{"unwatch", 1, "noscript loading stale fast allow_busy", 0, 0, 0, "fast transaction", "", "", "transactions", "2.2.0", "Forget about all watched keys"},
	{"wait", 3, "noscript", 0, 0, 0, "slow connection", "request_policy:all_shards response_policy:agg_min", "", "generic", "3.0.0", "Wait for the synchronous replication of all the write commands sent in the context of the current connection"},
	{"watch", -2, "noscript loading stale fast allow_busy", 1, -1, 1, "fast transaction", "", "RO|i1|r-1,1,0", "transactions", "2.2.0", "Watch the given keys to determine execution of the MULTI/EXEC block"},
	{"zadd", -4, "write denyoom fast", 1, 1, 1, "write sortedset fast", "", "RW update|i1|r0,1,0", "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists"},
	{"zcard", 2, "readonly fast", 1, 1, 1, "read sortedset fast", "", "RO|i1|r0,1,0", "sorted-set", "1.2.0", "Get the number of members in a sorted set"},
	{"zcount", 4, "readonly fast", 1, 1, 1, "read sortedset fast", "", "RO access|i1|r0,1,0", "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values"},
	{"zdiff", -3, "readonly movablekeys", 0, 0, 0, "read sortedset slow", "", "RO access|i1|n0,1,1", "sorted-set", "6.2.0", "Subtract multiple sorted sets"},
	{"zdiffstore", -4, "write denyoom movablekeys", 1, 1, 1, "write sortedset slow", "", "OW update|i1|r0,1,0;RO access|i2|n0,1,1", "sorted-set", "6.2.0", "Subtract multiple sorted sets and store the resulting sorted set in a new key"},
	{"zincrby", 4, "write denyoom fast", 1, 1, 1, "write sortedset fast", "", "RW access update|i1|r0,1,0", "sorted-set", "1.2.0", "Increment the score of a member in a sorted set"},
	{"zinter", -3, "readonly movablekeys", 0, 0, 0, "read sortedset slow", "", "RO access|i1|n0,1,1", "sorted-set", "6.2.0", "Intersect multiple sorted sets"},
	{"zintercard", -3, "readonly movablekeys", 0, 0, 0, "read sortedset slow", "", "RO access|i1|n0,1,1", "sorted-set", "7.0.0", "Intersect multiple sorted sets and return the cardinality of the result"},
	{"zinterstore", -4, "write denyoom movablekeys", 1, 1, 1, "write sortedset slow", "", "OW update|i1|r0,1,0;RO access|i2|n0,1,1", "sorted-set", "2.0.0", "Intersect multiple sorted sets and store the resulting sorted set in a new key"},
	{"zlexcount", 4, "readonly fast", 1, 1, 1, "read sortedset fast", "", "RO access|i1|r0,1,0", "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range"},
	{"zmpop", -4, "write movablekeys", 0, 0, 0, "write sortedset slow", "", "RW access delete|i1|n0,1,1", "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set"},
	{"zmscore", -3, "readonly fast", 1, 1, 1, "read sortedset fast", "", "RO access|i1|r0,1,0", "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set"},
	{"zpopmax", -2, "write fast", 1, 1, 1, "write sortedset fast", "", "RW access delete|i1|r0,1,0", "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set"},
	{"zpopmin", -2, "write fast", 1, 1, 1, "write sortedset fast", "", "RW access delete|i1|r0,1,0", "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set"},
	{"zrandmember", -2, "readonly", 1, 1, 1, "read sortedset slow", "nondeterministic_output", "RO access|i1|r0,1,0", "sorted-set", "6.2.0", "Get one or multiple random elements from a sorted set"},
	{"zrange", -4, "readonly", 1, 1, 1, "read sortedset slow", "", "RO access|i1|r0,1,0", "sorted-set", "1.2.0", "Return a range of members in a sorted set"},
	{"zrangebylex", -4, "readonly", 1, 1, 1, "read sortedset slow", "", "RO access|i1|r0,1,0", "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range"},
	{"zrangebyscore", -4, "readonly", 1, 1, 1, "read sortedset slow", "", "RO access|i1|r0,1,0", "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score"},
	{"zrangestore", -5, "write denyoom", 1, 2, 1, "write sortedset slow", "", "OW update|i1|r0,1,0;RO access|i2|r0,1,0", "sorted-set", "6.2.0", "Store a range of members from sorted set into another key"},
	{"zrank", 3, "readonly fast", 1, 1, 1, "read sortedset fast", "", "RO access|i1|r0,1,0", "sorted-set", "2.0.0", "Determine the index of a member in a sorted set"},
	{"zrem", -3, "write fast", 1, 1, 1, "write sortedset fast", "", "RW delete|i1|r0,1,0", "sorted-set", "1.2.0", "Remove one or more members from a sorted set"},
	{"zremrangebylex", 4, "write", 1, 1, 1, "write sortedset slow", "", "RW delete|i1|r0,1,0", "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range"},
	{"zremrangebyrank", 4, "write", 1, 1, 1, "write sortedset slow", "", "RW delete|i1|r0,1,0", "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes"},
	{"zremrangebyscore", 4, "write", 1, 1, 1, "write sortedset slow", "", "RW delete|i1|r0,1,0", "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores"},
	{"zrevrange", -4, "readonly", 1, 1, 1, "read sortedset slow", "", "RO access|i1|r0,1,0", "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low"},
	{"zrevrangebylex", -4, "readonly", 1, 1, 1, "read sortedset slow", "", "RO access|i1|r0,1,0", "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings."},
	{"zrevrangebyscore", -4, "readonly", 1, 1, 1, "read sortedset slow", "", "RO access|i1|r0,1,0", "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low"},
	{"zrevrank", 3, "readonly fast", 1, 1, 1, "read sortedset fast", "", "RO access|i1|r0,1,0", "sorted-set", "2.0.0", "Determine the index of a member in a sorted set, with scores ordered from high to low"},
	{"zscan", -3, "readonly", 1, 1, 1, "read sortedset slow", "nondeterministic_output", "RO access|i1|r0,1,0", "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores"},
	{"zscore", 3, "readonly fast", 1, 1, 1, "read sortedset fast", "", "RO access|i1|r0,1,0", "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set"},
	{"zunion", -3, "readonly movablekeys", 0, 0, 0, "read sortedset slow", "", "RO access|i1|n0,1,1", "sorted-set", "6.2.0", "Add multiple sorted sets"},
	{"zunionstore", -4, "write denyoom movablekeys", 1, 1, 1, "write sortedset slow", "", "OW update|i1|r0,1,0;RO access|i2|n0,1,1", "sorted-set", "2.0.0", "Add multiple sorted sets and store the resulting sorted set in a new key"},
	{"client|no-touch", 3, "noscript loading stale", 0, 0, 0, "slow connection", "", "", "connection", "7.2.0", "Controls whether commands sent by the client affect the LRU/LFU of accessed keys"},
	{"client|setinfo", 4, "noscript loading stale", 0, 0, 0, "slow connection", "request_policy:all_nodes response_policy:all_succeeded", "", "connection", "7.2.0", "Sets information specific to the client or connection"},
	{"waitaof", 4, "noscript", 0, 0, 0, "slow connection", "request_policy:all_shards response_policy:agg_min", "", "generic", "7.2.0", "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas"},
	// deadbolt's own commands (since: deadbolt's, not Redis's).
	{"deadbolt", -2, "", 0, 0, 0, "slow", "", "", "server", "deadbolt", "A container for deadbolt's own commands"},
	{"deadbolt|help", 2, "loading stale", 0, 0, 0, "slow", "", "", "server", "deadbolt", "Show helpful text about the different subcommands"},
	{"deadbolt|locks", -2, "readonly noscript", 0, 0, 0, "read slow", "nondeterministic_output", "", "server", "deadbolt", "List the locks held: kind, holders, held since, lease, waiters and queue"},
}
