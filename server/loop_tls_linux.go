package server

import (
	"crypto/tls"
	"errors"
	"io"
	"syscall"

	"github.com/deadbolt/deadbolt/resp"
)

// tlsToLoop moves a TLS connection whose handshake is done to the event
// loop (tlspipe.go), and reports whether it did; without a loop the
// connection stays on its goroutine.
func (s *Server) tlsToLoop(c *conn) bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return false
	}
	pipe, ok := tc.NetConn().(*tlsPipe)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lp := s.loopLocked()
	if lp == nil || s.closed {
		return false
	}
	c.mu.Lock()
	fd, err := pipe.toLoop(&c.lc.wbuf, detach)
	if err != nil {
		c.mu.Unlock()
		return false // closed (killed) during the handshake
	}
	rd := resp.NewBufferReader()
	rd.MaxBulkLen, rd.MaxRequest, rd.Unauthenticated = c.rd.MaxBulkLen, c.rd.MaxRequest, c.rd.Unauthenticated
	rd.SkipAbove = c.rd.SkipAbove
	c.lc.lp, c.lc.fd, c.lc.tls, c.lc.pipe = lp, fd, tc, pipe
	c.nc, c.rd = nil, rd
	c.mu.Unlock()
	lp.post(loopTask{kind: taskAdd, c: c})
	return true
}

// tlsReadChunk is how much ciphertext one read takes: a TLS record is at
// most 16 KiB and its overhead.
const tlsReadChunk = 17 << 10

// readableTLS is readable for a TLS connection: ciphertext from the
// socket, decrypted into the request reader.
func (l *eventLoop) readableTLS(c *conn) {
	if c.lc.closed || c.lc.eof {
		return
	}
	p := c.lc.pipe
	n, errno := rawRead(c.lc.fd, p.space(tlsReadChunk))
	switch {
	case n > 0:
		p.commit(n)
	case n == 0:
		c.lc.eof = true
	case errno != syscall.EAGAIN && errno != syscall.EINTR:
		l.close(c) // broken
		return
	default:
		return
	}
	l.decryptTLS(c)
}

// decryptTLS runs crypto/tls over the ciphertext the connection has (the
// handshake may have read the first requests already), then its requests.
func (l *eventLoop) decryptTLS(c *conn) {
	for {
		m, err := c.lc.tls.Read(c.rd.Space())
		if m > 0 {
			c.rd.Commit(m)
		}
		if err == nil {
			continue
		}
		if err == errWouldBlock {
			break
		}
		if errors.Is(err, io.EOF) {
			c.lc.eof = true // close_notify
			break
		}
		c.srv.cfg.Logger.Info("server: TLS connection broken", "client", c.addr, "err", err)
		l.close(c)
		return
	}
	if int64(c.rd.Buffered()) > c.srv.adm.queryLimit.Load() {
		l.close(c)
		return
	}
	if len(c.lc.wbuf) > c.lc.woff {
		l.markDirty(c) // crypto/tls answered something itself (a key update)
	}
	l.process(c)
}

// sealTLS encrypts the connection's new output behind the ciphertext the
// socket has not taken yet; it reports false when the session is broken
// (the connection is closed).
func (l *eventLoop) sealTLS(c *conn) bool {
	lc := &c.lc
	c.mu.Lock()
	plain := c.out
	c.out = lc.plain[:0]
	c.kicked = false
	c.mu.Unlock()
	if lc.woff == len(lc.wbuf) {
		lc.wbuf, lc.woff = lc.wbuf[:0], 0
	}
	if len(plain) > 0 {
		if _, err := lc.tls.Write(plain); err != nil {
			l.close(c)
			return false
		}
	}
	lc.plain = plain[:0]
	if cap(lc.plain) > shrinkOutput {
		lc.plain = nil
	}
	return true
}
