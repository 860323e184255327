package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"sync/atomic"
)

// A request with both Content-Length and Transfer-Encoding is framed
// ambiguously: a front proxy and cllama may disagree on where it ends,
// and what one reads as a second, pipelined request is the other's body
// (request smuggling). RFC 9112 §6.1 says to close the connection after
// answering it. Go's server drops Content-Length before a handler can see
// it, so the connection is watched instead: its request header lines are
// sniffed as they are read, and once a header block carried both, the
// response says Connection: close and nothing more is read from it. A
// false alarm (a body line that looks like a header) only closes a
// connection early.

// maxSniffLine bounds the bytes of one line kept while sniffing.
const maxSniffLine = 256

// framingListener wraps the connections it accepts.
type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framingConn{Conn: c}, nil
}

// framingConn notes ambiguous framing in what is read from it.
type framingConn struct {
	net.Conn
	ambiguous atomic.Bool
	// line is the start of the line being read; cl and te say which
	// framing headers the current header block carried.
	line   []byte
	cl, te bool
}

func (c *framingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.ambiguous.Load() {
		c.scan(p[:n])
	}
	return n, err
}

func (c *framingConn) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.keep(b)
			return
		}
		c.keep(b[:i])
		c.endLine()
		b = b[i+1:]
	}
}

func (c *framingConn) keep(b []byte) {
	if room := maxSniffLine - len(c.line); room > 0 {
		c.line = append(c.line, b[:min(len(b), room)]...)
	}
}

func (c *framingConn) endLine() {
	line := bytes.TrimRight(c.line, "\r")
	c.line = c.line[:0]
	if len(line) == 0 { // the end of a header block (or a blank body line)
		if c.cl && c.te {
			c.ambiguous.Store(true)
		}
		c.cl, c.te = false, false
		return
	}
	name, _, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return
	}
	switch {
	case bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")):
		c.cl = true
	case bytes.EqualFold(bytes.TrimSpace(name), []byte("Transfer-Encoding")):
		c.te = true
	}
}

type framingKey struct{}

// framingContext remembers each request's connection (http.Server
// ConnContext).
func framingContext(ctx context.Context, c net.Conn) context.Context {
	if fc, ok := c.(*framingConn); ok {
		return context.WithValue(ctx, framingKey{}, fc)
	}
	return ctx
}

// closeAmbiguous asks the server to close a connection whose framing was
// ambiguous once the response is written.
func closeAmbiguous(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fc, ok := r.Context().Value(framingKey{}).(*framingConn); ok && fc.ambiguous.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}
