package luaexec

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

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
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		start := time.Now()
		r := e.Run("", []byte(src), [][]byte{[]byte("k1")}, [][]byte{[]byte("a1")}, echoCaller{})
		el := time.Since(start)
		runtime.ReadMemStats(&m1)
		s := fmtReply(r)
		if len(s) > 300 {
			s = s[:300]
		}
		fmt.Printf("%q  [%v, total alloc %d MB, sys %d MB, used %d]\n", s, el, (m1.TotalAlloc-m0.TotalAlloc)>>20, m1.Sys>>20, e.run.used)
	}
}
