package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/deadbolt/deadbolt/resp"
)

// tooLarge answers a request whose argument the reader dropped for being
// larger than Config.MaxArgBytes (resp.TooLargeError), and reports whether
// err was that. The request was read whole and nothing of it buffered, so
// the connection goes on; inside MULTI the transaction fails, as for any
// command refused before it was queued.
func (c *conn) tooLarge(args [][]byte, err error) bool {
	if err == nil {
		return false // before errors.As, whose target escapes: no allocation per request
	}
	var tl *resp.TooLargeError
	if !errors.As(err, &tl) {
		return false
	}
	c.srv.stats.commands.Add(1)
	name := ""
	if len(args) > 0 {
		name = strings.ToLower(string(args[0]))
	}
	c.reject(name, fmt.Sprintf("ERR write refused: an argument of %d bytes makes its log entry larger than max-entry-bytes %d; store big values elsewhere, or split them",
		tl.Size, c.srv.maxEntryBytes()))
	return true
}

// maxEntryBytes is the entry limit MaxArgBytes was set from.
func (s *Server) maxEntryBytes() int64 { return max(s.cfg.MaxArgBytes-argSlack, 0) }

// argSlack is how much larger than --max-entry-bytes MaxArgBytes is: an
// envelope forwarded by a node of an older version through the client
// port (--insecure-cluster) carries a command of at most the limit in a
// few bytes more.
const argSlack = 1 << 10

// ArgLimit is the MaxArgBytes for a node whose entries are bounded by
// maxEntry bytes (0: none).
func ArgLimit(maxEntry int64) int64 {
	if maxEntry <= 0 {
		return 0
	}
	return maxEntry + argSlack
}
