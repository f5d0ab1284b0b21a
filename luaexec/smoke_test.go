package luaexec

import (
	"fmt"
	"os"
	"testing"

	"github.com/deadbolt/deadbolt/resp"
)

type echoCaller struct{}

func (echoCaller) Call(args [][]byte) resp.Reply {
	switch string(args[0]) {
	case "get":
		return resp.BulkString("v:" + string(args[1]))
	case "err":
		return resp.Err("WRONGTYPE Operation against a key holding the wrong kind of value")
	case "echo":
		return resp.BulkReply(args[1])
	}
	return resp.Err("ERR Unknown Redis command called from script")
}

func fmtReply(r resp.Reply) string { return string(r.Append(nil)) }

func TestSmoke(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	for _, src := range []string{os.Getenv("SRC")} {
		if src == "" {
			return
		}
		r := e.Run("", []byte(src), [][]byte{[]byte("k1")}, [][]byte{[]byte("a1")}, echoCaller{})
		fmt.Printf("%q\n", fmtReply(r))
	}
}
