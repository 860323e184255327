package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/proxy"
)

// A request framed by both Content-Length and Transfer-Encoding is
// answered and its connection closed (RFC 9112 §6.1): a request pipelined
// behind it is never read. A normally framed pair is answered twice.
func TestAmbiguousFramingClosesTheConnection(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "context", "a", "metadata.json"), `{"token":"a:b"}`)
	cfg, err := proxy.LoadConfig(nil, []string{"CLAW_CONTEXT_ROOT=" + filepath.Join(dir, "context"), "CLAW_AUTH_DIR=" + dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveOn(ctx, ln, cfg, audit.New(io.Discard), io.Discard, nil) }()
	defer func() { cancel(); <-done }()

	responses := func(raw string) (int, bool) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		n, closed := 0, false
		for {
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				return n, true
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			n++
			closed = res.Close
			if n == 2 {
				return n, closed
			}
		}
	}
	second := "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
	if n, closed := responses("GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + second); n != 1 || !closed {
		t.Fatalf("ambiguous framing: %d responses, closed %v; want 1 and closed", n, closed)
	}
	if n, _ := responses("GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + second); n != 2 {
		t.Fatalf("two plain pipelined requests got %d responses", n)
	}
}

// The sniffer reads whatever a client sends: it never panics and keeps at
// most maxSniffLine bytes, in any split of the stream.
func FuzzFramingScan(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"), 7)
	f.Add([]byte("\n\n\r\n:"), 1)
	f.Fuzz(func(t *testing.T, b []byte, split int) {
		c := &framingConn{}
		if split < 0 {
			split = -split
		}
		if split > len(b) {
			split = len(b)
		}
		c.scan(b[:split])
		c.scan(b[split:])
		if len(c.line) > maxSniffLine {
			t.Fatalf("kept %d bytes of a line", len(c.line))
		}
	})
}
