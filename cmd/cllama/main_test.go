package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/proxy"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestServeEndToEnd starts cllama as main does (config from flags and
// environment), talks to it with the OpenAI SDK, and shuts it down.
func TestServeEndToEnd(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-env" {
			http.Error(w, "bad key", 401)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "context", "tiverton", "metadata.json"), `{"token":"tiverton:abc"}`)
	env := []string{
		"CLAW_CONTEXT_ROOT=" + filepath.Join(dir, "context"),
		"CLAW_AUTH_DIR=" + filepath.Join(dir, "auth"), // no providers.json: environment only
		"CLAW_SESSION_HISTORY_DIR=" + filepath.Join(dir, "history"),
		"CLAW_POD=desk",
		"OPENAI_API_KEY=sk-env",
		"OPENAI_BASE_URL=" + up.URL + "/v1",
	}
	cfg, err := proxy.LoadConfig(nil, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveOn(ctx, ln, cfg, audit.New(&stdout), &stderr, nil) }()

	base := "http://" + ln.Addr().String()
	c := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("tiverton:abc"), option.WithMaxRetries(0))
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "openai/gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("ping")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != "pong" {
		t.Fatalf("%+v", res)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shutdown")
	}
	if !strings.Contains(stderr.String(), "providers: openai") {
		t.Errorf("start-up line: %s", stderr.String())
	}
	var types []string
	for _, ln := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var e audit.Event
		if err := json.Unmarshal([]byte(ln), &e); err != nil {
			t.Fatalf("audit line %q: %v", ln, err)
		}
		types = append(types, e.Type)
	}
	if strings.Join(types, ",") != "request,response" {
		t.Errorf("audit types %v", types)
	}
	if _, err := os.Stat(filepath.Join(dir, "history", "tiverton", "history.jsonl")); err != nil {
		t.Error(err)
	}
}

func TestRunBadConfig(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"-nope"}, nil, io.Discard, &stderr); code != 2 {
		t.Fatalf("exit %d", code)
	}
	if code := run([]string{"-h"}, nil, io.Discard, &stderr); code != 0 {
		t.Fatalf("-h exit %d", code)
	}
	stderr.Reset()
	if code := run([]string{"-listen", "127.0.0.1:0"}, []string{"CLAW_AUTH_DIR=" + t.TempDir(), "CLAW_CONTEXT_ROOT=" + t.TempDir(), "FOO_API_KEY=x", "BAR_BASE_URL=ftp://x"}, io.Discard, &stderr); code != 1 {
		t.Fatalf("bad provider exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "bar") {
		t.Fatalf("stderr %s", stderr.String())
	}
}

// TestShutdownDrainsInFlightStream cancels cllama (as SIGTERM does) while
// a stream is half relayed: the stream must still complete.
func TestShutdownDrainsInFlightStream(t *testing.T) {
	release := make(chan struct{})
	halfway := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		close(halfway)
		<-release
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "context", "a1", "metadata.json"), `{"token":"a1:k"}`)
	cfg, err := proxy.LoadConfig(nil, []string{
		"CLAW_CONTEXT_ROOT=" + filepath.Join(dir, "context"), "CLAW_AUTH_DIR=" + dir,
		"LOCAL_BASE_URL=" + up.URL + "/v1",
	}, io.Discard)
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

	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/chat/completions",
		strings.NewReader(`{"model":"local/m","stream":true,"messages":[]}`))
	req.Header.Set("Authorization", "Bearer a1:k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-halfway
	cancel() // SIGTERM
	// Shutdown has begun once the listener refuses new connections.
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still open after cancel")
		}
		runtime.Gosched()
	}
	close(release)
	body, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Fatalf("stream cut by shutdown: %q %v", body, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shutdown")
	}
}

// -version prints one line naming the program on stdout, whatever the
// environment holds.
func TestRunVersion(t *testing.T) {
	for _, arg := range []string{"-version", "--version"} {
		var stdout, stderr strings.Builder
		if code := run([]string{arg}, []string{"BAR_BASE_URL=ftp://x"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "cllama ") || !strings.Contains(stdout.String(), "go1") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, code, stdout.String(), stderr.String())
		}
	}
}
