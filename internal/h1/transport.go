// Package h1 is cllama's client for cleartext HTTP/1.1 upstreams: the
// pod's services and model servers, reached on the pod network. It writes
// each request and reads its response on the calling goroutine, over a
// pool of keep-alive connections.
//
// Why not net/http's Transport alone: for every call it hands the request
// to a writer goroutine and the response back from a reader goroutine of
// the connection, and each hand-off wakes an idle processor. On a
// low-traffic proxy those wake-ups cost as much CPU as the rest of the
// call (BenchmarkTransport: this client takes half net/http's CPU per
// call one call at a time, and a fifth less at 16 at once).
// The message syntax is still net/http's: requests are written by
// http.Request.Write and responses read by http.ReadResponse.
//
// Everything else — https (where HTTP/2 is worth its goroutines), requests
// that must go through a proxy, protocol upgrades, a transport asked to
// bound connections per host — goes to the Fallback transport, and
// Disabled sends everything there (cllama's CLLAMA_UPSTREAM_CLIENT=
// net/http). A request with "Expect: 100-continue" is handled here: its
// body is sent at once with the headers (cllama's bodies are in memory;
// waiting for the interim answer would only add a round trip) and the
// server's 100 is skipped as any 1xx is.
//
// An idle connection is checked before reuse: on Unix by a non-blocking
// peek that sees a peer's close or stray bytes (open_unix.go); elsewhere
// it is not checked, and a connection the peer closed fails its next
// request, which is then made again on a new connection when nothing of
// it was sent or it is one a server may receive twice.
//
// How much of cllama's edge over a bare reverse proxy is this client's
// (BenchmarkFloorProcess, which runs the same cllama binary a second time
// with CLLAMA_UPSTREAM_CLIENT=net/http; two cores, a noisy machine, medians
// of five rounds): for 1 KB requests at 32 at once cllama spent 85 µs of
// CPU a request with h1 and 92 µs with net/http, against the bare proxy's
// 122 µs (0.69× and 0.75×); for a mediated turn (two model calls and a
// tool call) 400 µs against 480 µs (0.83×). So most of cllama's lead is
// its own request path; this client adds 8–17% less CPU a call on top.
// Where CPU is not the bound (many cores, few requests) it changes
// latency by microseconds, not throughput.
package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// Transport is an http.RoundTripper for http:// URLs; see the package
// comment.
type Transport struct {
	// Fallback carries every request this transport does not: other
	// schemes, requests Proxy sends through a proxy, upgrades. Default:
	// http.DefaultTransport.
	Fallback http.RoundTripper
	// Disabled sends every request to Fallback: the operator's switch
	// back to net/http (cllama's CLLAMA_UPSTREAM_CLIENT=net/http).
	Disabled bool
	// MaxConnsPerHost, when positive, sends every request to Fallback,
	// which bounds connections per host (net/http's MaxConnsPerHost, set
	// there): this client keeps no such bound (it opens a connection
	// whenever none is idle, as net/http does by default), and a bound
	// asked of it is not silently ignored.
	MaxConnsPerHost int
	// Proxy, when set, is asked for each request; a request it gives a
	// proxy URL goes to Fallback (which knows how to use one).
	Proxy func(*http.Request) (*url.URL, error)
	// DialContext opens connections. Default: a net.Dialer with a 10 s
	// timeout and TCP keep-alives.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxIdleConnsPerHost bounds the idle connections kept per host.
	// Default 64.
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes connections idle this long. Default 90 s.
	IdleConnTimeout time.Duration
	// MaxResponseHeaderBytes bounds a response's status line and headers.
	// Default 1 MiB.
	MaxResponseHeaderBytes int64
	// ReadBufferSize and WriteBufferSize size each connection's buffers.
	// Default 32 KiB each.
	ReadBufferSize, WriteBufferSize int

	mu      sync.Mutex
	idle    map[string][]*conn // per host:port, most recently used last
	reaping bool               // a sweep of stale idle connections is scheduled
}

// conn is one pooled connection.
type conn struct {
	t      *Transport
	key    string
	nc     net.Conn
	lr     *limitReader
	cw     *errWriter
	br     *bufio.Reader
	bw     *bufio.Writer
	since  time.Time // when it went idle
	reused bool      // it carried an exchange before this one
}

// limitReader bounds what may be read through it until the limit is
// lifted: the response headers are read with one in place.
type limitReader struct {
	r    io.Reader
	left int64
	max  int64
	got  int64 // read in this exchange
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("upstream response headers exceed %d bytes", l.max)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	l.got += int64(n)
	return n, err
}

// errWriter notes the connection's first write error, and what an
// exchange has written.
type errWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	e.n += int64(n)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

var _ http.RoundTripper = (*Transport)(nil)

// longAgo is a deadline in the past: setting it ends a blocked read or
// write at once.
var longAgo = time.Unix(1, 0)

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		return t.fallback().RoundTrip(req)
	}
	if t.Proxy != nil {
		if u, err := t.Proxy(req); err != nil || u != nil {
			return t.fallback().RoundTrip(req)
		}
	}
	ctx := req.Context()
	key := hostPort(req.URL)
	for retried := false; ; retried = true {
		if err := ctx.Err(); err != nil {
			closeBody(req)
			return nil, context.Cause(ctx)
		}
		c, err := t.get(ctx, key)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := t.exchange(ctx, c, req)
		if err == nil {
			return resp, nil
		}
		// A kept connection the server closed just after it was checked
		// fails at once; the call is made again on a new connection when
		// that cannot repeat it: nothing of it was sent, or it is one a
		// server may receive twice and no byte of an answer came.
		if retried || !c.reused || ctx.Err() != nil || !c.mayRepeat(req) {
			return nil, err
		}
		next, ok := rewind(req)
		if !ok {
			return nil, err
		}
		req = next
	}
}

// exchange writes req on c and reads its response.
func (t *Transport) exchange(ctx context.Context, c *conn, req *http.Request) (*http.Response, error) {
	c.cw.n, c.lr.got = 0, 0
	// The request's context ends the exchange: the deadline wakes a read
	// or write on the connection, which is not used again. (A request
	// body blocked in its own Read is not woken; the proxy's bodies are in
	// memory.)
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(longAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.close()
		if cause := context.Cause(ctx); cause != nil {
			return nil, cause
		}
		return nil, err
	}
	err := req.Write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		// A server may answer before it has read the whole body (a 413,
		// say) and close: when the peer's close refused the write, its
		// answer, if one came, is the one to give. (After any other
		// failure, the body's own, the server may still wait for it.)
		if peerClosed(c.cw.err) {
			if resp, rerr := c.readResponse(req); rerr == nil {
				resp.Close = true
				return t.respond(c, req, resp, stop)
			}
		}
		return fail(err)
	}
	resp, err := c.readResponse(req)
	if err != nil {
		return fail(err)
	}
	return t.respond(c, req, resp, stop)
}

// peerClosed reports whether a write failed because the other side
// closed the connection: what it sent before is still there to read, and
// reading it cannot block.
func peerClosed(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// mayRepeat reports whether the failed exchange of req on c may be made
// again: none of it was written, or no answer came to a request a server
// may receive twice.
func (c *conn) mayRepeat(req *http.Request) bool {
	return c.cw.n == 0 || (c.lr.got == 0 && replayable(req))
}

// replayable reports whether a server may receive req twice: its method
// is idempotent, or it carries an idempotency key.
func replayable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// rewind is req with its body to send again, when it can be had.
func rewind(req *http.Request) (*http.Request, bool) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	next := *req
	next.Body = body
	return &next, true
}

func (t *Transport) fallback() http.RoundTripper {
	if t.Fallback == nil {
		return http.DefaultTransport
	}
	return t.Fallback
}

// handles reports whether req is one this transport carries itself.
func (t *Transport) handles(req *http.Request) bool {
	if t.Disabled || t.MaxConnsPerHost > 0 || req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		return false
	}
	return req.Method != http.MethodConnect && req.Header.Get("Upgrade") == ""
}

// readResponse reads the final response to req, skipping informational
// (1xx) ones, with the header bound in place.
func (c *conn) readResponse(req *http.Request) (*http.Response, error) {
	for range maxInformational + 1 {
		c.lr.left = c.lr.max
		resp, err := http.ReadResponse(c.br, req)
		c.lr.left = math.MaxInt64
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return nil, errors.New("upstream switched protocols unasked")
		}
		if resp.StatusCode >= 200 || resp.StatusCode < 100 {
			return resp, nil
		}
	}
	return nil, fmt.Errorf("upstream sent more than %d informational responses", maxInformational)
}

// maxInformational bounds the 1xx responses read before the final one.
const maxInformational = 5

// respond gives resp to the caller with a body that returns the
// connection to the pool once read to its end.
func (t *Transport) respond(c *conn, req *http.Request, resp *http.Response, stop func() bool) (*http.Response, error) {
	reuse := !resp.Close && !req.Close
	if resp.Body == http.NoBody || resp.Body == nil {
		resp.Body = http.NoBody
		c.done(reuse, stop)
		return resp, nil
	}
	resp.Body = &body{c: c, rc: resp.Body, ctx: req.Context(), reuse: reuse, stop: stop}
	return resp, nil
}

// body is a response body on a pooled connection.
type body struct {
	c     *conn
	rc    io.ReadCloser // the body as http.ReadResponse gives it
	ctx   context.Context
	reuse bool
	stop  func() bool

	mu   sync.Mutex
	done bool // the connection was released or closed
	eof  bool // ... after the body's end
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	done, eof := b.done, b.eof
	b.mu.Unlock()
	if eof {
		return 0, io.EOF
	}
	if done {
		return 0, errBodyClosed
	}
	n, err := b.rc.Read(p)
	if err == nil {
		return n, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done { // closed meanwhile
		if err == io.EOF {
			return n, err
		}
		return n, errBodyClosed
	}
	b.done = true
	if err == io.EOF {
		b.eof = true
		b.c.done(b.reuse, b.stop)
		return n, io.EOF
	}
	b.stop()
	b.c.close()
	if cause := context.Cause(b.ctx); cause != nil {
		return n, cause
	}
	return n, err
}

// Close ends the body. Before its end the connection is closed, not
// reused (what is left of the body is not worth reading).
func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return nil
	}
	b.done = true
	b.stop()
	b.c.close() // wakes a Read blocked on it
	return nil
}

var errBodyClosed = errors.New("h1: read on a closed response body")

// done releases c after a complete exchange: back to the pool when it
// may carry another, else closed.
func (c *conn) done(reuse bool, stop func() bool) {
	if !stop() || !reuse || c.br.Buffered() > 0 {
		// The context ended (its deadline is set on the connection), the
		// server said close, or it sent more than the response.
		c.close()
		return
	}
	c.t.put(c)
}

func (c *conn) close() { _ = c.nc.Close() }

// get returns an idle connection to key that is still open, or dials one.
func (t *Transport) get(ctx context.Context, key string) (*conn, error) {
	now := time.Now()
	for {
		t.mu.Lock()
		list := t.idle[key]
		if len(list) == 0 {
			t.mu.Unlock()
			break
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[key] = list[:len(list)-1]
		t.mu.Unlock()
		if now.Sub(c.since) < t.idleTimeout() && open(c.nc) {
			c.reused = true
			return c, nil
		}
		c.close()
	}
	dial := t.DialContext
	if dial == nil {
		dial = defaultDialer.DialContext
	}
	nc, err := dial(ctx, "tcp", key)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return nil, cause
		}
		return nil, err
	}
	max := t.MaxResponseHeaderBytes
	if max <= 0 {
		max = 1 << 20
	}
	c := &conn{t: t, key: key, nc: nc}
	c.lr = &limitReader{r: nc, left: math.MaxInt64, max: max}
	c.br = bufio.NewReaderSize(c.lr, size(t.ReadBufferSize))
	c.cw = &errWriter{w: nc}
	c.bw = bufio.NewWriterSize(c.cw, size(t.WriteBufferSize))
	return c, nil
}

var defaultDialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}

func size(n int) int {
	if n <= 0 {
		return 32 << 10
	}
	return n
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleConnTimeout <= 0 {
		return 90 * time.Second
	}
	return t.IdleConnTimeout
}

// put makes c idle, or closes it when its host has enough idle ones.
func (t *Transport) put(c *conn) {
	max := t.MaxIdleConnsPerHost
	if max <= 0 {
		max = 64
	}
	c.since = time.Now()
	t.mu.Lock()
	if t.idle == nil {
		t.idle = map[string][]*conn{}
	}
	if len(t.idle[c.key]) >= max {
		t.mu.Unlock()
		c.close()
		return
	}
	t.idle[c.key] = append(t.idle[c.key], c)
	if !t.reaping {
		t.reaping = true
		time.AfterFunc(t.idleTimeout(), t.reap)
	}
	t.mu.Unlock()
}

// reap closes the connections that have been idle too long, and comes
// back while any stay idle.
func (t *Transport) reap() {
	cutoff := time.Now().Add(-t.idleTimeout())
	var stale []*conn
	t.mu.Lock()
	left := 0
	for key, list := range t.idle {
		keep := list[:0]
		for _, c := range list {
			if c.since.Before(cutoff) {
				stale = append(stale, c)
			} else {
				keep = append(keep, c)
			}
		}
		clear(list[len(keep):])
		if len(keep) == 0 {
			delete(t.idle, key)
		} else {
			t.idle[key] = keep
		}
		left += len(keep)
	}
	t.reaping = left > 0
	if t.reaping {
		time.AfterFunc(t.idleTimeout()/2, t.reap)
	}
	t.mu.Unlock()
	for _, c := range stale {
		c.close()
	}
}

// CloseIdleConnections closes the idle connections, and Fallback's.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	all := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range all {
		for _, c := range list {
			c.close()
		}
	}
	if ci, ok := t.fallback().(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// IdleConns is how many connections are idle (for tests and metrics).
func (t *Transport) IdleConns() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, list := range t.idle {
		n += len(list)
	}
	return n
}

// hostPort is u's host with its port (80 when u names none).
func hostPort(u *url.URL) string {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
