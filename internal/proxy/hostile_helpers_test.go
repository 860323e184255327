package proxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// addBob gives the pod a second agent, bob (bobToken).
func addBob(t *testing.T, p *pod) {
	t.Helper()
	writeFile(t, filepath.Join(p.root, "bob", "metadata.json"), `{"token":"`+bobToken+`"}`)
}

// slowUpload opens a connection to the pod, sends the head of a request
// declaring a body of declared bytes (chunked when declared < 0) and the
// first bytes of that body, sent, then holds the connection open.
func slowUpload(t *testing.T, p *pod, method, path, token string, declared int64, sent []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	framing := fmt.Sprintf("Content-Length: %d", declared)
	if declared < 0 {
		framing = "Transfer-Encoding: chunked"
		sent = fmt.Appendf(nil, "%x\r\n%s", len(sent), sent) // a chunk never finished
	}
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: cllama\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%s\r\n\r\n",
		method, path, token, framing)
	if _, err := c.Write(append([]byte(head), sent...)); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads the response on c, failing the test if none comes (nor
// the connection closes) within a generous deadline. It returns nil when
// the connection was closed without one.
func answer(t *testing.T, c net.Conn, within time.Duration) *http.Response {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("no answer within %s: the connection is still held", within)
		}
		return nil
	}
	return res
}

// waitFor polls cond until it holds, failing after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// requestsOf is how many requests of agent are in progress.
func (a *admission) requestsOf(agent string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.agents[agent].requests
}

// postWithin is p.post as alice, failing the test when no answer comes
// within a generous deadline (a request the pod should refuse may be
// held instead).
func postWithin(t *testing.T, p *pod, path, body string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.front.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	res, err := p.front.Client().Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}
