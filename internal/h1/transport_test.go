package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests talk to servers on 127.0.0.1 only. Nothing is asserted about
// how long anything takes: waits for something that happens in the
// background poll with a generous deadline, and a call that could hang is
// given a deadline only so that a hang fails the test instead of stalling
// it.

// waitLimit bounds a wait for something that must happen; it is never
// reached when the code is right.
const waitLimit = 20 * time.Second

// peeks reports whether this platform's open looks at the socket; where
// it cannot, a connection the peer closed while idle is not noticed before
// it is used.
func peeks() bool {
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd", "netbsd", "openbsd":
		return true
	}
	return false
}

func needPeek(t *testing.T) {
	t.Helper()
	if !peeks() {
		t.Skip("open cannot check an idle connection on " + runtime.GOOS)
	}
}

// eventually polls cond until it holds, failing the test after waitLimit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// noFallback is the Fallback of transports that must carry every request
// of the test themselves.
type noFallback struct{ t *testing.T }

func (f noFallback) RoundTrip(req *http.Request) (*http.Response, error) {
	f.t.Errorf("request to %s went to Fallback", req.URL)
	return nil, errors.New("unexpected fallback")
}

// recorder is a Fallback that records what it is given.
type recorder struct {
	mu         sync.Mutex
	reqs       []*http.Request
	closedIdle int
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return &http.Response{
		StatusCode: 299,
		Header:     http.Header{"X-Fallback": {"yes"}},
		Body:       http.NoBody,
		Request:    req,
	}, nil
}

func (r *recorder) CloseIdleConnections() {
	r.mu.Lock()
	r.closedIdle++
	r.mu.Unlock()
}

func (r *recorder) got() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.reqs...)
}

func newTransport(t *testing.T) *Transport {
	tr := &Transport{Fallback: noFallback{t}}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// connStates counts a test server's connections by state.
type connStates struct {
	mu     sync.Mutex
	opened int
	closed int
}

func (s *connStates) hook(_ net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.opened++
	case http.StateClosed, http.StateHijacked:
		s.closed++
	}
}

func (s *connStates) counts() (opened, closed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened, s.closed
}

func (s *connStates) wantOpened(t *testing.T, want int) {
	t.Helper()
	if got, _ := s.counts(); got != want {
		t.Errorf("server accepted %d connections, want %d", got, want)
	}
}

// newServer starts an httptest server that counts its connections.
func newServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *connStates) {
	cs := &connStates{}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = cs.hook
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, cs
}

// rawServer is a TCP server on 127.0.0.1 whose connections are handled
// by a function of the test.
type rawServer struct {
	url      string
	accepted atomic.Int32
	ln       net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
	closed   bool
}

func newRawServer(t testing.TB, handle func(net.Conn)) *rawServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{url: "http://" + ln.Addr().String(), ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				c.Close()
				return
			}
			s.conns = append(s.conns, c)
			s.wg.Add(1)
			s.mu.Unlock()
			go func() {
				defer s.wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

// close stops the server and waits for its handlers, closing their
// connections to wake them.
func (s *rawServer) close() {
	s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// serveLoop answers the requests on c one after another with what
// respond returns, until the client closes or respond says stop.
func serveLoop(c net.Conn, respond func(*http.Request) (reply string, keep bool)) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		reply, keep := respond(req)
		if _, err := io.WriteString(c, reply); err != nil || !keep {
			return
		}
	}
}

// answering is a raw server that answers every request with reply,
// keeping the connection after it or not.
func answering(t *testing.T, reply string, keep bool) *rawServer {
	return newRawServer(t, func(c net.Conn) {
		serveLoop(c, func(*http.Request) (string, bool) { return reply, keep })
	})
}

// payload is n bytes that differ with seed.
func payload(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + (i*7+seed*13+i/251)%26)
	}
	return b
}

func newRequest(t testing.TB, ctx context.Context, method, url string, body io.Reader) *http.Request {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// do runs req through tr and reads the whole response body.
func do(t *testing.T, tr *Transport, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatalf("closing the body: %v", err)
	}
	return resp, b
}

func get(t *testing.T, tr *Transport, url string) []byte {
	t.Helper()
	resp, b := do(t, tr, newRequest(t, context.Background(), "GET", url, nil))
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	return b
}

// roundTripSoon runs RoundTrip on another goroutine and fails the test if
// it has not returned within waitLimit (a hang, not a slow call).
func roundTripSoon(t *testing.T, tr *Transport, req *http.Request) (*http.Response, error) {
	t.Helper()
	type result struct {
		resp *http.Response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		resp, err := tr.RoundTrip(req)
		ch <- result{resp, err}
	}()
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-time.After(waitLimit):
		t.Fatalf("RoundTrip of %s %s has not returned", req.Method, req.URL)
		return nil, nil
	}
}

// idleDead reports whether every idle connection of tr is one open finds
// closed (or sent to) by the server.
func idleDead(tr *Transport) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, list := range tr.idle {
		for _, c := range list {
			if open(c.nc) {
				return false
			}
		}
	}
	return true
}

// closeTracker is a request body that notes its Close.
type closeTracker struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeTracker) Close() error {
	c.closed.Add(1)
	return nil
}

func (c *closeTracker) wantClosed(t *testing.T) {
	t.Helper()
	if c.closed.Load() == 0 {
		t.Error("the request body was not closed")
	}
}

// zeros is a body of n zero bytes, unknown to the transport's fast paths.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > z.n {
		p = p[:z.n]
	}
	clear(p)
	z.n -= int64(len(p))
	return len(p), nil
}

// failingReader gives data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func echo(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("X-Method", r.Method)
	w.Header().Set("X-Transfer-Encoding", strings.Join(r.TransferEncoding, ","))
	w.Header().Set("X-Content-Length", strconv.FormatInt(r.ContentLength, 10))
	w.Write(b)
}

// 1. Keep-alive.

func TestSequentialRequestsShareOneConnection(t *testing.T) {
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			w.Write(payload(n, n))
			return
		}
		echo(w, r)
	})
	tr := newTransport(t)
	sizes := []int{0, 1, 100, 4096, 70000, 1 << 20}
	for i, n := range sizes {
		if b := get(t, tr, fmt.Sprintf("%s/?n=%d", srv.URL, n)); !bytes.Equal(b, payload(n, n)) {
			t.Fatalf("GET of %d bytes: got %d bytes, not the ones sent", n, len(b))
		}
		if got := tr.IdleConns(); got != 1 {
			t.Fatalf("after GET %d: IdleConns() = %d, want 1", i, got)
		}

		body := payload(i+100, n)
		resp, b := do(t, tr, newRequest(t, context.Background(), "POST", srv.URL, bytes.NewReader(body)))
		if resp.StatusCode != 200 || resp.Header.Get("X-Method") != "POST" {
			t.Fatalf("POST: status %d, method %q", resp.StatusCode, resp.Header.Get("X-Method"))
		}
		if !bytes.Equal(b, body) {
			t.Fatalf("POST of %d bytes: echoed %d bytes, not the ones sent", n, len(b))
		}
		if got := tr.IdleConns(); got != 1 {
			t.Fatalf("after POST %d: IdleConns() = %d, want 1", i, got)
		}
	}
	cs.wantOpened(t, 1)
}

func TestRequestIsWrittenAsGiven(t *testing.T) {
	type seen struct {
		host, uri, method, ua string
		hdr                   []string
		body                  string
	}
	got := make(chan seen, 1)
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Host, r.RequestURI, r.Method, r.UserAgent(), r.Header.Values("X-Multi"), string(b)}
	})
	tr := newTransport(t)
	req := newRequest(t, context.Background(), "PUT", srv.URL+"/a/b%2Fc?q=1&r=%20", strings.NewReader("data"))
	req.Host = "upstream.example"
	req.Header.Add("X-Multi", "one")
	req.Header.Add("X-Multi", "two")
	req.Header.Set("User-Agent", "h1-test")
	resp, _ := do(t, tr, req)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	s := <-got
	want := seen{"upstream.example", "/a/b%2Fc?q=1&r=%20", "PUT", "h1-test", []string{"one", "two"}, "data"}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("server saw %+v, want %+v", s, want)
	}
	if resp.Request != req {
		t.Errorf("resp.Request is not the request")
	}
}

// 2. Connection: close.

func TestServerConnectionCloseIsHonoured(t *testing.T) {
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("close") {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, "hello")
	})
	tr := newTransport(t)

	resp, b := do(t, tr, newRequest(t, context.Background(), "GET", srv.URL+"/?close", nil))
	if string(b) != "hello" || !resp.Close {
		t.Fatalf("body %q, Close %v; want hello, true", b, resp.Close)
	}
	if got := tr.IdleConns(); got != 0 {
		t.Fatalf("IdleConns() = %d after Connection: close, want 0", got)
	}
	get(t, tr, srv.URL)
	cs.wantOpened(t, 2)
	get(t, tr, srv.URL)
	cs.wantOpened(t, 2)
	if got := tr.IdleConns(); got != 1 {
		t.Fatalf("IdleConns() = %d, want 1", got)
	}
}

func TestRequestCloseIsHonoured(t *testing.T) {
	sawClose := make(chan bool, 1)
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		sawClose <- r.Close
		io.WriteString(w, "hello")
	})
	tr := newTransport(t)

	get(t, tr, srv.URL)
	<-sawClose
	req := newRequest(t, context.Background(), "GET", srv.URL, nil)
	req.Close = true
	// The idle connection is used for it, and then not kept.
	if _, b := do(t, tr, req); string(b) != "hello" {
		t.Fatalf("body %q", b)
	}
	if !<-sawClose {
		t.Error("the server did not see Connection: close")
	}
	if got := tr.IdleConns(); got != 0 {
		t.Fatalf("IdleConns() = %d after a request with Close, want 0", got)
	}
	cs.wantOpened(t, 1)
	get(t, tr, srv.URL)
	<-sawClose
	cs.wantOpened(t, 2)
}

// A server that keeps the connection whatever the request says: the
// client must still not use it again after asking for a close.
func TestRequestCloseWithServerThatIgnoresIt(t *testing.T) {
	srv := answering(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", true)
	tr := newTransport(t)
	for range 3 {
		req := newRequest(t, context.Background(), "GET", srv.url, nil)
		req.Close = true
		if resp, b := do(t, tr, req); string(b) != "hello" || resp.Close {
			t.Fatalf("body %q, Close %v", b, resp.Close)
		}
		if got := tr.IdleConns(); got != 0 {
			t.Fatalf("IdleConns() = %d after a request with Close, want 0", got)
		}
	}
	if got := srv.accepted.Load(); got != 3 {
		t.Errorf("server accepted %d connections, want 3", got)
	}
}

func TestEOFDelimitedBody(t *testing.T) {
	srv := answering(t, "HTTP/1.1 200 OK\r\n\r\nuntil the end", false)
	tr := newTransport(t)
	for range 3 {
		if b := get(t, tr, srv.url); string(b) != "until the end" {
			t.Fatalf("body %q", b)
		}
		if got := tr.IdleConns(); got != 0 {
			t.Fatalf("IdleConns() = %d after a body ended by close, want 0", got)
		}
	}
	if got := srv.accepted.Load(); got != 3 {
		t.Errorf("server accepted %d connections, want 3", got)
	}
}

// 3. A connection the server closed while idle.

func TestServerClosedIdleConnectionIsNotUsed(t *testing.T) {
	needPeek(t)
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})
	tr := newTransport(t)
	for i := range 3 {
		get(t, tr, srv.URL)
		if got := tr.IdleConns(); got != 1 {
			t.Fatalf("IdleConns() = %d, want 1", got)
		}
		srv.CloseClientConnections()
		eventually(t, "the client to see the close", func() bool { return idleDead(tr) })
		if b := get(t, tr, srv.URL); string(b) != "hello" {
			t.Fatalf("body %q", b)
		}
		cs.wantOpened(t, i+2)
	}
}

func TestServerClosingAfterEachResponse(t *testing.T) {
	needPeek(t)
	// The server closes after each response without saying so.
	srv := answering(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false)
	tr := newTransport(t)
	for i := range 5 {
		if b := get(t, tr, srv.url); string(b) != "hello" {
			t.Fatalf("request %d: body %q", i, b)
		}
		eventually(t, "the client to see the close", func() bool { return idleDead(tr) })
	}
	if got := srv.accepted.Load(); got != 5 {
		t.Errorf("server accepted %d connections, want 5", got)
	}
}

func TestIdleConnectionTheServerWroteToIsNotUsed(t *testing.T) {
	needPeek(t)
	// After its answer the server sends bytes nobody asked for (as a
	// server timing out an idle connection may) and keeps the
	// connection: the next request must not read them as its answer.
	srv := answering(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", true)
	tr := newTransport(t)
	get(t, tr, srv.url)
	// Have the server side write to the idle connection.
	srv.mu.Lock()
	sc := srv.conns[0]
	srv.mu.Unlock()
	if _, err := io.WriteString(sc, "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stray bytes to arrive", func() bool { return idleDead(tr) })
	resp, b := do(t, tr, newRequest(t, context.Background(), "GET", srv.url, nil))
	if resp.StatusCode != 200 || string(b) != "hello" {
		t.Fatalf("status %d, body %q; want the answer, not the stray 408", resp.StatusCode, b)
	}
	if got := srv.accepted.Load(); got != 2 {
		t.Errorf("server accepted %d connections, want 2", got)
	}
}

func TestExtraBytesAfterResponseMeanNoReuse(t *testing.T) {
	needPeek(t)
	srv := answering(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nwrong", true)
	tr := newTransport(t)
	for i := range 3 {
		if b := get(t, tr, srv.url); string(b) != "hello" {
			t.Fatalf("request %d: body %q", i, b)
		}
	}
	// The second response of each connection may or may not have been
	// read with the first; either way no connection carried two.
	if got := srv.accepted.Load(); got != 3 {
		t.Errorf("server accepted %d connections, want 3", got)
	}
}

func TestStaleIdleConnectionIsNotUsed(t *testing.T) {
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})
	tr := newTransport(t)
	tr.IdleConnTimeout = time.Hour
	get(t, tr, srv.URL)
	// Age the idle connection past the timeout without waiting an hour.
	tr.mu.Lock()
	for _, list := range tr.idle {
		for _, c := range list {
			c.since = c.since.Add(-2 * time.Hour)
		}
	}
	tr.mu.Unlock()
	get(t, tr, srv.URL)
	cs.wantOpened(t, 2)
	eventually(t, "the server to see the stale connection closed", func() bool {
		_, closed := cs.counts()
		return closed == 1
	})
}

// 4. Closing a body.

func TestBodyClosedBeforeItsEndClosesTheConnection(t *testing.T) {
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(payload(1, 1<<20))
	})
	tr := newTransport(t)
	resp, err := tr.RoundTrip(newRequest(t, context.Background(), "GET", srv.URL, nil))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, payload(1, 100)) {
		t.Fatalf("body starts %q", buf)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for range 2 {
		if n, err := resp.Body.Read(buf); n != 0 || err == nil || err == io.EOF {
			t.Fatalf("Read after Close = %d, %v; want 0 and an error other than EOF", n, err)
		}
	}
	if got := tr.IdleConns(); got != 0 {
		t.Fatalf("IdleConns() = %d, want 0", got)
	}
	eventually(t, "the server to see the connection closed", func() bool {
		_, closed := cs.counts()
		return closed == 1
	})
	if b := get(t, tr, srv.URL); !bytes.Equal(b, payload(1, 1<<20)) {
		t.Fatal("second response differs")
	}
	cs.wantOpened(t, 2)
}

func TestBodyCloseWakesABlockedRead(t *testing.T) {
	release := make(chan struct{})
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	tr := newTransport(t)
	resp, err := tr.RoundTrip(newRequest(t, context.Background(), "GET", srv.URL, nil))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				readErr <- err
				return
			}
		}
	}()
	resp.Body.Close()
	select {
	case err := <-readErr:
		if err == io.EOF {
			t.Errorf("blocked Read returned EOF after Close; want an error")
		}
	case <-time.After(waitLimit):
		t.Fatal("Close did not wake the blocked Read")
	}
}

func TestBodyReadToItsEnd(t *testing.T) {
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(payload(2, 1000))
	})
	tr := newTransport(t)
	for range 3 {
		resp, err := tr.RoundTrip(newRequest(t, context.Background(), "GET", srv.URL, nil))
		if err != nil {
			t.Fatal(err)
		}
		// Exactly the Content-Length: the read that fills buf already
		// ends the body, without a Read that returns 0, EOF.
		buf := make([]byte, 1000)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, payload(2, 1000)) {
			t.Fatal("body differs")
		}
		if got := tr.IdleConns(); got != 1 {
			t.Fatalf("IdleConns() = %d once the body's bytes are read, want 1", got)
		}
		for range 3 {
			if n, err := resp.Body.Read(buf); n != 0 || err != io.EOF {
				t.Fatalf("Read after the end = %d, %v; want 0, EOF", n, err)
			}
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if n, err := resp.Body.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("Read after the end and Close = %d, %v; want 0, EOF", n, err)
		}
		if got := tr.IdleConns(); got != 1 {
			t.Fatalf("IdleConns() = %d, want 1", got)
		}
	}
	cs.wantOpened(t, 1)
}

// 5. Bodies of other shapes.

func TestChunkedResponseWithTrailers(t *testing.T) {
	parts := [][]byte{payload(1, 10), payload(2, 5000), payload(3, 70000), payload(4, 1)}
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Count")
		for _, p := range parts {
			w.Write(p)
			w.(http.Flusher).Flush()
		}
		w.Header().Set("X-Count", strconv.Itoa(len(parts)))
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
	})
	want := bytes.Join(parts, nil)
	tr := newTransport(t)
	for range 3 {
		resp, b := do(t, tr, newRequest(t, context.Background(), "GET", srv.URL, nil))
		if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" || resp.ContentLength != -1 {
			t.Fatalf("TransferEncoding %q, ContentLength %d; want chunked, -1", resp.TransferEncoding, resp.ContentLength)
		}
		if !bytes.Equal(b, want) {
			t.Fatalf("body of %d bytes differs from the %d sent", len(b), len(want))
		}
		if got := resp.Trailer.Get("X-Count"); got != "4" {
			t.Errorf("trailer X-Count = %q, want 4", got)
		}
		if got := resp.Trailer.Get("X-Late"); got != "late" {
			t.Errorf("trailer X-Late = %q, want late", got)
		}
	}
	cs.wantOpened(t, 1)
	if got := tr.IdleConns(); got != 1 {
		t.Errorf("IdleConns() = %d, want 1", got)
	}
}

func TestBodilessResponsesKeepTheConnection(t *testing.T) {
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/head":
			w.Header().Set("Content-Length", "12345")
			w.Write(payload(0, 12345)) // not sent, for HEAD
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		case "/empty":
			w.Header().Set("Content-Length", "0")
		}
	})
	tr := newTransport(t)
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"HEAD", "/head", 200},
		{"GET", "/204", 204},
		{"GET", "/304", 304},
		{"GET", "/empty", 200},
		{"HEAD", "/head", 200},
	} {
		resp, err := tr.RoundTrip(newRequest(t, context.Background(), c.method, srv.URL+c.path, nil))
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		if resp.StatusCode != c.status {
			t.Fatalf("%s %s: status %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
		if c.method == "HEAD" && resp.ContentLength != 12345 {
			t.Errorf("HEAD: ContentLength %d, want 12345", resp.ContentLength)
		}
		// Closed unread.
		if err := resp.Body.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("%s %s: Read = %d, %v; want 0, EOF", c.method, c.path, n, err)
		}
		if got := tr.IdleConns(); got != 1 {
			t.Fatalf("%s %s: IdleConns() = %d, want 1", c.method, c.path, got)
		}
	}
	cs.wantOpened(t, 1)
}

// 6. Contexts.

func TestCancelWhileWaitingForTheResponse(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			// Read to the end: net/http notices the client going away
			// (and ends r.Context()) only after the body.
			io.ReadAll(r.Body)
			arrived <- struct{}{}
			<-r.Context().Done() // the client went away
			return
		}
		io.WriteString(w, "fast")
	})
	tr := newTransport(t)
	get(t, tr, srv.URL) // the slow request gets an idle connection

	cause := errors.New("caller gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	body := &closeTracker{Reader: strings.NewReader("payload")}
	req := newRequest(t, ctx, "POST", srv.URL+"/slow", body)
	go func() {
		<-arrived
		cancel(cause)
	}()
	resp, err := roundTripSoon(t, tr, req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("RoundTrip succeeded after cancel")
	}
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the cancel cause", err)
	}
	body.wantClosed(t)
	if got := tr.IdleConns(); got != 0 {
		t.Fatalf("IdleConns() = %d, want 0", got)
	}
	eventually(t, "the server to see the connection closed", func() bool {
		_, closed := cs.counts()
		return closed == 1
	})
	get(t, tr, srv.URL)
	cs.wantOpened(t, 2)
}

func TestDeadlineWhileWaitingForTheResponse(t *testing.T) {
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	tr := newTransport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := roundTripSoon(t, tr, newRequest(t, ctx, "GET", srv.URL, nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

func TestCancelWhileReadingTheBody(t *testing.T) {
	release := make(chan struct{})
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w.Write(payload(5, 1000))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		io.WriteString(w, "fast")
	})
	t.Cleanup(func() { close(release) })
	tr := newTransport(t)

	cause := errors.New("caller gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", srv.URL+"/slow", nil))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1000)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, payload(5, 1000)) {
		t.Fatal("body differs")
	}
	cancel(cause)
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				readErr <- err
				return
			}
		}
	}()
	select {
	case err := <-readErr:
		if !errors.Is(err, cause) {
			t.Fatalf("Read after cancel: %v, want the cancel cause", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Read did not return after cancel")
	}
	if _, err := resp.Body.Read(buf); err == nil || err == io.EOF {
		t.Errorf("second Read after cancel: %v, want an error", err)
	}
	resp.Body.Close()
	if got := tr.IdleConns(); got != 0 {
		t.Fatalf("IdleConns() = %d, want 0", got)
	}
	get(t, tr, srv.URL)
	cs.wantOpened(t, 2)
}

// The context ends with the body's last bytes already received: the
// caller may get them, but the connection, its deadline set by the
// cancel, must not go back to the pool.
func TestCancelWithTheBodyReceived(t *testing.T) {
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(payload(6, 1000))
	})
	tr := newTransport(t)
	for i := range 3 {
		cause := errors.New("caller gave up")
		ctx, cancel := context.WithCancelCause(context.Background())
		resp, err := tr.RoundTrip(newRequest(t, ctx, "GET", srv.URL, nil))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 999)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		cancel(cause)
		rest, err := io.ReadAll(resp.Body)
		if err != nil && !errors.Is(err, cause) {
			t.Fatalf("reading the rest: %v, want nothing or the cause", err)
		}
		if err == nil && !bytes.Equal(append(buf, rest...), payload(6, 1000)) {
			t.Fatal("body differs")
		}
		resp.Body.Close()
		if got := tr.IdleConns(); got != 0 {
			t.Fatalf("IdleConns() = %d after the context ended, want 0", got)
		}
		get(t, tr, srv.URL) // on a new connection, kept
		cs.wantOpened(t, i+2)
	}
}

func TestCancelAfterTheBodyEndedKeepsNothingBroken(t *testing.T) {
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})
	tr := newTransport(t)
	for range 3 {
		ctx, cancel := context.WithCancelCause(context.Background())
		if _, b := do(t, tr, newRequest(t, ctx, "GET", srv.URL, nil)); string(b) != "hello" {
			t.Fatalf("body %q", b)
		}
		// The connection is back in the pool: ending the context of
		// the call that used it must not touch it.
		cancel(errors.New("done"))
	}
	cs.wantOpened(t, 1)
}

func TestContextDoneBeforeRoundTrip(t *testing.T) {
	tr := newTransport(t)
	tr.DialContext = func(context.Context, string, string) (net.Conn, error) {
		t.Error("dialed for a request whose context had ended")
		return nil, errors.New("no")
	}
	cause := errors.New("too late")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	body := &closeTracker{Reader: strings.NewReader("x")}
	_, err := tr.RoundTrip(newRequest(t, ctx, "POST", "http://127.0.0.1:1/", body))
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the cause", err)
	}
	body.wantClosed(t)
}

func TestCancelDuringDial(t *testing.T) {
	tr := newTransport(t)
	dialing := make(chan struct{})
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		close(dialing)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	cause := errors.New("caller gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-dialing
		cancel(cause)
	}()
	_, err := roundTripSoon(t, tr, newRequest(t, ctx, "GET", "http://127.0.0.1:1/", nil))
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the cause", err)
	}
}

// 7. Header size.

func TestMaxResponseHeaderBytes(t *testing.T) {
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("h"))
		w.Header().Set("X-Big", strings.Repeat("h", n))
		w.Write(payload(3, 100000))
	})
	tr := newTransport(t)
	tr.MaxResponseHeaderBytes = 1024

	_, err := tr.RoundTrip(newRequest(t, context.Background(), "GET", srv.URL+"/?h=4096", nil))
	if err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Fatalf("err = %v, want the headers to exceed the bound", err)
	}
	if got := tr.IdleConns(); got != 0 {
		t.Fatalf("IdleConns() = %d, want 0", got)
	}
	// Small headers pass, and the bound is on the headers only: the
	// body may be far larger.
	for range 2 {
		if b := get(t, tr, srv.URL+"/?h=500"); !bytes.Equal(b, payload(3, 100000)) {
			t.Fatal("body differs")
		}
	}
}

func TestDefaultMaxResponseHeaderBytes(t *testing.T) {
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("h"))
		for i := 0; n > 0; i++ {
			w.Header().Set("X-Big-"+strconv.Itoa(i), strings.Repeat("h", min(n, 64<<10)))
			n -= 64 << 10
		}
	})
	tr := newTransport(t)
	if _, err := tr.RoundTrip(newRequest(t, context.Background(), "GET", srv.URL+"/?h=1200000", nil)); err == nil {
		t.Fatal("1.2 MB of headers accepted; want the 1 MiB default to refuse them")
	}
	get(t, tr, srv.URL+"/?h=900000")
}

// 8. Informational responses.

func TestInformationalResponsesAreSkipped(t *testing.T) {
	final := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Final: yes\r\n\r\nfinal"
	infos := []string{
		"HTTP/1.1 100 Continue\r\n\r\n",
		"HTTP/1.1 102 Processing\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
	}
	srv := newRawServer(t, func(c net.Conn) {
		serveLoop(c, func(req *http.Request) (string, bool) {
			n, _ := strconv.Atoi(req.URL.Query().Get("n"))
			var b strings.Builder
			for i := range n {
				b.WriteString(infos[i%len(infos)])
			}
			return b.String() + final, true
		})
	})
	tr := newTransport(t)
	for n := range 6 { // up to 5 informational responses are fine
		resp, b := do(t, tr, newRequest(t, context.Background(), "GET", fmt.Sprintf("%s/?n=%d", srv.url, n), nil))
		if resp.StatusCode != 200 || string(b) != "final" || resp.Header.Get("X-Final") != "yes" {
			t.Fatalf("%d informational: status %d, body %q", n, resp.StatusCode, b)
		}
		if resp.Header.Get("Link") != "" {
			t.Errorf("%d informational: a 1xx header leaked into the final response", n)
		}
	}
	if got := srv.accepted.Load(); got != 1 {
		t.Errorf("server accepted %d connections, want 1", got)
	}

	_, err := tr.RoundTrip(newRequest(t, context.Background(), "GET", srv.url+"/?n=6", nil))
	if err == nil {
		t.Fatal("6 informational responses accepted")
	}
	if got := tr.IdleConns(); got != 0 {
		t.Fatalf("IdleConns() = %d after the error, want 0", got)
	}
	get(t, tr, srv.url+"/?n=1")
}

func TestUnaskedSwitchingProtocolsIsAnError(t *testing.T) {
	srv := answering(t, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", true)
	tr := newTransport(t)
	if _, err := tr.RoundTrip(newRequest(t, context.Background(), "GET", srv.url, nil)); err == nil {
		t.Fatal("101 to a request that asked for no upgrade accepted")
	}
	if got := tr.IdleConns(); got != 0 {
		t.Fatalf("IdleConns() = %d, want 0", got)
	}
}

// net/http's server answers "Expect: 100-continue" with a 100 when the
// handler first reads the body; the transport sends the body at once and
// skips the 100.
func TestExpectContinue(t *testing.T) {
	srv, cs := newServer(t, echo)
	tr := newTransport(t)
	for i := range 3 {
		sent := payload(i, 10000)
		req := newRequest(t, context.Background(), "POST", srv.URL, bytes.NewReader(sent))
		req.Header.Set("Expect", "100-continue")
		resp, b := do(t, tr, req)
		if resp.StatusCode != 200 || !bytes.Equal(b, sent) {
			t.Fatalf("status %d, %d bytes echoed of %d", resp.StatusCode, len(b), len(sent))
		}
	}
	cs.wantOpened(t, 1)
}

// 9. Fallback.

func TestRequestsForFallback(t *testing.T) {
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "direct")
	})
	proxied := srv.URL + "/via-proxy"
	failing := srv.URL + "/proxy-error"
	fb := &recorder{}
	var asked atomic.Int32
	tr := &Transport{
		Fallback: fb,
		Proxy: func(req *http.Request) (*url.URL, error) {
			asked.Add(1)
			switch req.URL.String() {
			case proxied:
				return url.Parse("http://proxy.invalid:3128")
			case failing:
				return nil, errors.New("bad proxy config")
			}
			return nil, nil
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	var dialed atomic.Int32
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}

	upgrade := newRequest(t, context.Background(), "GET", srv.URL+"/ws", nil)
	upgrade.Header.Set("Connection", "Upgrade")
	upgrade.Header.Set("Upgrade", "websocket")
	connect := newRequest(t, context.Background(), "CONNECT", "http://"+srv.Listener.Addr().String(), nil)
	noHost := &http.Request{Method: "GET", URL: &url.URL{Scheme: "http", Path: "/x"}, Header: http.Header{}}
	noHost = noHost.WithContext(context.Background())
	reqs := []*http.Request{
		newRequest(t, context.Background(), "GET", "https://"+srv.Listener.Addr().String()+"/", nil),
		newRequest(t, context.Background(), "GET", proxied, nil),
		newRequest(t, context.Background(), "GET", failing, nil),
		upgrade,
		connect,
		noHost,
	}
	for i, req := range reqs {
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d (%s %s): %v", i, req.Method, req.URL, err)
		}
		if resp.StatusCode != 299 || resp.Header.Get("X-Fallback") != "yes" {
			t.Fatalf("request %d (%s %s): status %d; want Fallback's answer", i, req.Method, req.URL, resp.StatusCode)
		}
		got := fb.got()
		if len(got) != i+1 || got[i] != req {
			t.Fatalf("request %d (%s %s): Fallback was not given it", i, req.Method, req.URL)
		}
	}
	if n := dialed.Load(); n != 0 {
		t.Fatalf("dialed %d times for requests that belong to Fallback", n)
	}
	cs.wantOpened(t, 0)

	// Proxy saying no proxy: the transport's own.
	before := asked.Load()
	if b := get(t, tr, srv.URL+"/direct"); string(b) != "direct" {
		t.Fatalf("body %q", b)
	}
	if asked.Load() != before+1 {
		t.Error("Proxy was not asked about the direct request")
	}
	if n := len(fb.got()); n != len(reqs) {
		t.Errorf("Fallback got the direct request too")
	}
	cs.wantOpened(t, 1)

	tr.CloseIdleConnections()
	fb.mu.Lock()
	closedIdle := fb.closedIdle
	fb.mu.Unlock()
	if closedIdle == 0 {
		t.Error("CloseIdleConnections did not reach Fallback")
	}
}

// 10. Concurrency.

func TestConcurrentRequests(t *testing.T) {
	const workers, perWorker = 32, 50
	srv, cs := newServer(t, echo)
	tr := newTransport(t)
	tr.MaxIdleConnsPerHost = workers
	run(t, tr, srv.URL, workers, perWorker, false)
	if opened, _ := cs.counts(); opened > workers {
		t.Errorf("%d connections opened for %d callers that always read to the end", opened, workers)
	}
	if got := tr.IdleConns(); got > tr.MaxIdleConnsPerHost || got == 0 {
		t.Errorf("IdleConns() = %d, want 1 to %d", got, tr.MaxIdleConnsPerHost)
	}
}

func TestConcurrentRequestsWithEarlyCloses(t *testing.T) {
	const workers, perWorker = 32, 50
	srv, _ := newServer(t, echo)
	tr := newTransport(t)
	tr.MaxIdleConnsPerHost = 4
	run(t, tr, srv.URL, workers, perWorker, true)
	if got := tr.IdleConns(); got > tr.MaxIdleConnsPerHost {
		t.Errorf("IdleConns() = %d, want at most %d", got, tr.MaxIdleConnsPerHost)
	}
}

// run has workers goroutines make perWorker requests each, with bodies
// of their own, and checks each echo. With mixed, some calls stop reading
// early or ask for the connection to close, and some bodies are of
// unknown length.
func run(t *testing.T, tr *Transport, url string, workers, perWorker int, mixed bool) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				if err := exchange(tr, url, w, i, mixed); err != nil {
					t.Errorf("worker %d, request %d: %.300s", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func exchange(tr *Transport, url string, w, i int, mixed bool) error {
	seed := w*1000 + i
	n := (seed * 7919) % 20000
	if i%10 == 3 {
		n = 100000 + w
	}
	sent := append([]byte(fmt.Sprintf("w%d-i%d:", w, i)), payload(seed, n)...)
	var body io.Reader = bytes.NewReader(sent)
	if mixed && i%3 == 1 {
		body = io.MultiReader(bytes.NewReader(sent[:len(sent)/2]), bytes.NewReader(sent[len(sent)/2:]))
	}
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		return err
	}
	if mixed && i%3 == 1 {
		req.ContentLength = -1
	}
	req.Close = mixed && i%11 == 5
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if mixed && i%7 == 2 {
		// Read a little, then close.
		got := make([]byte, min(len(sent), 1000))
		if _, err := io.ReadFull(resp.Body, got); err != nil {
			return err
		}
		if !bytes.Equal(got, sent[:len(got)]) {
			return fmt.Errorf("echo starts %.20q, want %.20q", got, sent)
		}
		return nil
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, sent) {
		return fmt.Errorf("echo of %d bytes starting %.20q, want %d starting %.20q", len(got), got, len(sent), sent)
	}
	return nil
}

// atOnce makes calls GETs of url at the same time: each reaches the
// server's handler (which sends on arrived and waits for release) before
// any is answered, so each has a connection of its own.
func atOnce(t *testing.T, tr *Transport, url string, calls int, arrived, release chan struct{}) {
	t.Helper()
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			resp, err := tr.RoundTrip(newRequest(t, context.Background(), "GET", url, nil))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	for range calls {
		<-arrived
	}
	close(release)
	wg.Wait()
}

func TestMaxIdleConnsPerHost(t *testing.T) {
	const calls = 5
	arrived := make(chan struct{}, calls)
	release := make(chan struct{})
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "hello")
	})
	tr := newTransport(t)
	tr.MaxIdleConnsPerHost = 2
	// Five calls at once need five connections.
	atOnce(t, tr, srv.URL, calls, arrived, release)
	cs.wantOpened(t, calls)
	if got := tr.IdleConns(); got != 2 {
		t.Fatalf("IdleConns() = %d, want 2", got)
	}
	eventually(t, "the server to see the surplus connections closed", func() bool {
		_, closed := cs.counts()
		return closed == calls-2
	})
}

// 11. Idle connections.

func TestIdleConnTimeout(t *testing.T) {
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})
	tr := newTransport(t)
	tr.IdleConnTimeout = 50 * time.Millisecond
	for round := 1; round <= 2; round++ {
		get(t, tr, srv.URL)
		// Usually still idle here, but the reaper may already have been.
		if got := tr.IdleConns(); got > 1 {
			t.Fatalf("IdleConns() = %d, want at most 1", got)
		}
		eventually(t, "the idle connection to be closed", func() bool { return tr.IdleConns() == 0 })
		eventually(t, "the server to see the connection closed", func() bool {
			_, closed := cs.counts()
			return closed == round
		})
	}
	cs.wantOpened(t, 2)
}

func TestCloseIdleConnections(t *testing.T) {
	const calls = 3
	arrived := make(chan struct{}, calls+1)
	release := make(chan struct{})
	srv, cs := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "hello")
	})
	tr := newTransport(t)
	atOnce(t, tr, srv.URL, calls, arrived, release)
	if got := tr.IdleConns(); got != calls {
		t.Fatalf("IdleConns() = %d, want %d", got, calls)
	}
	tr.CloseIdleConnections()
	if got := tr.IdleConns(); got != 0 {
		t.Fatalf("IdleConns() = %d after CloseIdleConnections, want 0", got)
	}
	eventually(t, "the server to see the connections closed", func() bool {
		_, closed := cs.counts()
		return closed == calls
	})
	// And the transport carries on.
	get(t, tr, srv.URL)
	cs.wantOpened(t, calls+1)
}

// 12. Request bodies.

func TestRequestBodyOfUnknownLength(t *testing.T) {
	srv, cs := newServer(t, echo)
	tr := newTransport(t)
	for _, n := range []int{0, 1, 5000, 300000} {
		sent := payload(n, n)
		body := &closeTracker{Reader: io.MultiReader(bytes.NewReader(sent[:n/2]), bytes.NewReader(sent[n/2:]))}
		req := newRequest(t, context.Background(), "POST", srv.URL, body)
		req.ContentLength = -1
		resp, got := do(t, tr, req)
		if !bytes.Equal(got, sent) {
			t.Fatalf("%d bytes: echoed %d bytes, not the ones sent", n, len(got))
		}
		if te := resp.Header.Get("X-Transfer-Encoding"); te != "chunked" {
			t.Errorf("%d bytes: server saw Transfer-Encoding %q, want chunked", n, te)
		}
		body.wantClosed(t)
	}
	cs.wantOpened(t, 1)
}

func TestRequestBodyReadError(t *testing.T) {
	errRead := errors.New("body source failed")
	srv, cs := newServer(t, echo)
	tr := newTransport(t)
	get(t, tr, srv.URL) // an idle connection to use, and lose

	for _, length := range []int64{-1, 100000} {
		body := &closeTracker{Reader: &failingReader{data: payload(1, 50000), err: errRead}}
		req := newRequest(t, context.Background(), "POST", srv.URL, body)
		req.ContentLength = length
		resp, err := roundTripSoon(t, tr, req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("ContentLength %d: RoundTrip succeeded with a failing body", length)
		}
		if !strings.Contains(err.Error(), errRead.Error()) {
			t.Errorf("ContentLength %d: err = %v, want the body's error", length, err)
		}
		body.wantClosed(t)
		if got := tr.IdleConns(); got != 0 {
			t.Fatalf("IdleConns() = %d, want 0", got)
		}
	}
	// A body shorter than its ContentLength.
	req := newRequest(t, context.Background(), "POST", srv.URL, io.NopCloser(strings.NewReader("short")))
	req.ContentLength = 10
	if _, err := roundTripSoon(t, tr, req); err == nil {
		t.Fatal("a body shorter than its ContentLength was sent")
	}
	eventually(t, "the server to see the failed connections closed", func() bool {
		_, closed := cs.counts()
		return closed == 3
	})
	get(t, tr, srv.URL)
	cs.wantOpened(t, 4)
}

// 13. Dialing.

func TestDialFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tr := newTransport(t)
	body := &closeTracker{Reader: strings.NewReader("x")}
	_, err = tr.RoundTrip(newRequest(t, context.Background(), "POST", "http://"+addr+"/", body))
	if err == nil {
		t.Fatal("RoundTrip to a closed port succeeded")
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("err = %v, want a dial error", err)
	}
	body.wantClosed(t)
}

func TestDefaultPort(t *testing.T) {
	for in, want := range map[string]string{
		"http://example.com/x":   "example.com:80",
		"http://example.com:81":  "example.com:81",
		"http://[::1]/":          "[::1]:80",
		"http://[::1]:8080/":     "[::1]:8080",
		"http://127.0.0.1:9/a?b": "127.0.0.1:9",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostPort(u); got != want {
			t.Errorf("hostPort(%s) = %s, want %s", in, got, want)
		}
	}
}

// 14. An answer before the request is sent.

// A server that refuses a large body answers 413 and closes without
// reading it. The close with unread data makes its kernel reset the
// connection, so the client's write fails; the answer that came before
// the reset is still there to read (on Linux, which keeps data received
// before a reset readable), and it is what the caller gets.
func TestAnswerBeforeTheBodyIsSent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("relies on Linux keeping data received before a reset readable")
	}
	srv := newRawServer(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big\n")
		// Closed unread (by newRawServer).
	})
	tr := newTransport(t)
	for range 3 {
		const size = 32 << 20 // more than the socket buffers hold
		body := &closeTracker{Reader: &zeros{n: size}}
		req := newRequest(t, context.Background(), "POST", srv.url, body)
		req.ContentLength = size
		resp, err := roundTripSoon(t, tr, req)
		if err != nil {
			t.Fatalf("RoundTrip: %v; want the server's 413", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || string(b) != "too big\n" || err != nil {
			t.Fatalf("status %d, body %q, err %v; want 413, too big", resp.StatusCode, b, err)
		}
		if !resp.Close {
			t.Error("resp.Close is false for an answer on a broken connection")
		}
		body.wantClosed(t)
		if got := tr.IdleConns(); got != 0 {
			t.Fatalf("IdleConns() = %d, want 0", got)
		}
	}
}

// The same against net/http's server, which shuts its side for writing,
// waits a moment (rstAvoidanceDelay, 500 ms) and then closes.
func TestAnswerBeforeTheBodyIsSentByGoServer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("relies on Linux keeping data received before a reset readable")
	}
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		http.Error(w, "too big", http.StatusRequestEntityTooLarge)
	})
	tr := newTransport(t)
	const size = 32 << 20
	req := newRequest(t, context.Background(), "POST", srv.URL, io.NopCloser(&zeros{n: size}))
	req.ContentLength = size
	resp, err := roundTripSoon(t, tr, req)
	if err != nil {
		t.Fatalf("RoundTrip: %v; want the server's 413", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || string(b) != "too big\n" || err != nil {
		t.Fatalf("status %d, body %q, err %v; want 413, too big", resp.StatusCode, b, err)
	}
}

// open itself.

func TestOpen(t *testing.T) {
	needPeek(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() (client, server net.Conn) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		s := <-accepted
		t.Cleanup(func() { s.Close() })
		return c, s
	}

	c, s := dial()
	if !open(c) {
		t.Fatal("open = false for a fresh connection")
	}
	s.Write([]byte("x"))
	eventually(t, "open to see the byte", func() bool { return !open(c) })
	// The peek took nothing.
	buf := make([]byte, 1)
	if n, err := c.Read(buf); n != 1 || buf[0] != 'x' || err != nil {
		t.Fatalf("Read = %d %q %v after open; want the byte", n, buf[:n], err)
	}

	c, s = dial()
	s.Close()
	eventually(t, "open to see the close", func() bool { return !open(c) })

	// A connection that is no socket cannot be looked at: taken as open.
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if !open(p1) {
		t.Error("open = false for a pipe")
	}
}

// recordingFallback answers every request itself and counts them.
type recordingFallback struct{ n int }

func (f *recordingFallback) RoundTrip(r *http.Request) (*http.Response, error) {
	f.n++
	return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r, Header: http.Header{}}, nil
}

// What this client does not do itself goes to net/http, explicitly: the
// operator's switch (Disabled) and a bound on connections per host.
func TestFallbackTakesWhatThisClientDoesNotDo(t *testing.T) {
	for name, tc := range map[string]struct {
		disabled bool
		maxConns int
	}{
		"disabled":           {disabled: true},
		"max conns per host": {maxConns: 4},
	} {
		t.Run(name, func(t *testing.T) {
			fb := &recordingFallback{}
			tr := &Transport{Disabled: tc.disabled, MaxConnsPerHost: tc.maxConns, Fallback: fb}
			tr.DialContext = func(context.Context, string, string) (net.Conn, error) {
				t.Fatal("this client dialled a request its fallback should carry")
				return nil, nil
			}
			req, _ := http.NewRequest(http.MethodPost, "http://upstream.invalid/x", strings.NewReader("body"))
			resp, err := tr.RoundTrip(req)
			if err != nil || resp.StatusCode != 204 || fb.n != 1 {
				t.Fatalf("resp %v, err %v, fallback calls %d", resp, err, fb.n)
			}
		})
	}
}
