package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// A malformed or unreachable CLLAMA_STATE_URL stops cllama naming the
// setting, and nothing it prints shows the URL's password.
func TestHostileStateURLPasswordNeverOnStderr(t *testing.T) {
	for _, c := range []struct{ url, secret string }{
		{"redis://user:secret@host:port:bad/0", "secret"},
		{"redis://:secret@[::1", "secret"},
		{"rediss://u:p%zz@h", "%zz"},
		{"redis://u:secret@127.0.0.1:1/0", "secret"},
	} {
		var stdout, stderr bytes.Buffer
		env := []string{"CLAW_AUTH_DIR=" + t.TempDir(), "CLAW_CONTEXT_ROOT=" + t.TempDir(), "CLLAMA_STATE_URL=" + c.url}
		if code := run([]string{"-listen", "127.0.0.1:0"}, env, &stdout, &stderr); code == 0 {
			t.Fatalf("%s: cllama started", c.url)
		}
		out := stderr.String() + stdout.String()
		if strings.Contains(out, c.secret) || !strings.Contains(out, "CLLAMA_STATE_URL") {
			t.Errorf("%s: printed %q", c.url, out)
		}
	}
}

// The agent listener's connection timeouts are cllama's settings: a
// header sent slowly, and a kept-alive connection left idle, are closed
// after CLLAMA_READ_HEADER_TIMEOUT and CLLAMA_IDLE_TIMEOUT.
func TestHostileConnectionTimeoutsAreConfigured(t *testing.T) {
	p := startMCPPod(t, "CLLAMA_READ_HEADER_TIMEOUT=200ms", "CLLAMA_IDLE_TIMEOUT=200ms")
	addr := strings.TrimPrefix(p.base, "http://")
	closedWithin := func(c net.Conn, d time.Duration) bool {
		_ = c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_, _ = io.WriteString(slow, "GET /health HTTP/1.1\r\nHost: cllama\r\n") // and no end of header
	if !closedWithin(slow, 5*time.Second) {
		t.Fatal("a header still unfinished after 5s holds its connection (CLLAMA_READ_HEADER_TIMEOUT=200ms)")
	}

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	_, _ = io.WriteString(idle, "GET /health HTTP/1.1\r\nHost: cllama\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("health: %v %v", res, err)
	}
	if !closedWithin(idle, 5*time.Second) {
		t.Fatal("a connection idle for 5s is still open (CLLAMA_IDLE_TIMEOUT=200ms)")
	}
}

// Slow MCP uploads from one agent are bounded like every body: past the
// agent's requests in progress they are refused at once, the others are
// answered 408 after CLLAMA_BODY_READ_TIMEOUT, and none holds its
// connection open.
func TestHostileSlowMCPUploadsAreBounded(t *testing.T) {
	p := startMCPPod(t, "CLLAMA_BODY_READ_TIMEOUT=500ms")
	addr := strings.TrimPrefix(p.base, "http://")
	const conns, declared = 48, 256 << 10
	var wg sync.WaitGroup
	statuses := make(chan int, conns)
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: cllama\r\nAuthorization: Bearer analyst:s3cret\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n", declared)
		_, _ = c.Write(bytes.Repeat([]byte(" "), declared-64)) // all but 64 bytes
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			switch {
			case err == nil:
				statuses <- res.StatusCode
			case errors.Is(err, os.ErrDeadlineExceeded):
				statuses <- 0
			default:
				statuses <- -1 // closed without an answer
			}
		}()
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[0] > 0 || count[http.StatusRequestTimeout]+count[http.StatusTooManyRequests] != conns {
		t.Fatalf("answers by status (0: still held after 15s, -1: closed): %v; want each 408 or 429", count)
	}
}
