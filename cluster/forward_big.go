package cluster

import (
	"io"
	"net"
	"strconv"

	"github.com/deadbolt/deadbolt/resp"
)

// vectorAbove is the size of a forwarded command from which its arguments
// are written as they are rather than copied into one buffer.
const vectorAbove = 64 << 10

// writeCommand sends args as a RESP array. A large command (a value near
// --max-entry-bytes) is not copied: the header lines and the arguments go
// out side by side (net.Buffers: writev on a TCP connection), so
// forwarding a write costs the follower its envelope and no copy of it.
func writeCommand(w io.Writer, args [][]byte) error {
	total := 0
	for _, a := range args {
		total += len(a)
	}
	if total < vectorAbove {
		req := make([]resp.Reply, len(args))
		for i, a := range args {
			req[i] = resp.BulkReply(a)
		}
		_, err := w.Write(resp.ArrayReply(req...).Append(nil))
		return err
	}
	// Each piece before an argument is at most "\r\n$<20 digits>\r\n", the
	// first "*<20 digits>\r\n$<20 digits>\r\n"; hdr never grows past its
	// capacity, so the pieces stay valid.
	hdr := make([]byte, 0, 24*(2*len(args)+2))
	bufs := make(net.Buffers, 0, 2*len(args)+1)
	piece := func(build func([]byte) []byte) {
		start := len(hdr)
		hdr = build(hdr)
		bufs = append(bufs, hdr[start:len(hdr):len(hdr)])
	}
	for i, a := range args {
		piece(func(b []byte) []byte {
			if i == 0 {
				b = append(b, '*')
				b = strconv.AppendInt(b, int64(len(args)), 10)
			}
			b = append(b, "\r\n$"...)
			b = strconv.AppendInt(b, int64(len(a)), 10)
			return append(b, "\r\n"...)
		})
		bufs = append(bufs, a)
	}
	piece(func(b []byte) []byte { return append(b, "\r\n"...) })
	_, err := bufs.WriteTo(w)
	return err
}
