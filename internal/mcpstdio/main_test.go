package mcpstdio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoBin is cmd/claw-mcp-echo, built once for the package's tests.
var echoBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpstdio-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	echoBin = filepath.Join(dir, "claw-mcp-echo")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	build := exec.CommandContext(ctx, "go", "build", "-o", echoBin, "github.com/clawdapus/clawgo/cmd/claw-mcp-echo")
	build.Stderr = os.Stderr
	err = build.Run()
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "building claw-mcp-echo:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testWrapper is a wrapper serving on a loopback port.
type testWrapper struct {
	*Wrapper
	URL  string // base URL, no path
	Logs *syncBuffer
	stop context.CancelFunc
	done chan error
	once sync.Once
}

// fastConfig keeps restarts and stops quick so failure tests finish fast.
func fastConfig(args ...string) Config {
	return Config{
		Command:        echoBin,
		Args:           args,
		CallTimeout:    5 * time.Second,
		StartWait:      5 * time.Second,
		InitTimeout:    5 * time.Second,
		BackoffInitial: 20 * time.Millisecond,
		BackoffMax:     200 * time.Millisecond,
		StopGrace:      500 * time.Millisecond,
	}
}

func startWrapper(t testing.TB, cfg Config) *testWrapper {
	t.Helper()
	logs := &syncBuffer{}
	w, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tw := &testWrapper{Wrapper: w, URL: "http://" + ln.Addr().String(), Logs: logs, stop: cancel, done: make(chan error, 1)}
	go func() { tw.done <- w.Serve(ctx, ln) }()
	t.Cleanup(func() { tw.Shutdown(t) })
	return tw
}

// Shutdown stops the wrapper and waits for Serve to return.
func (tw *testWrapper) Shutdown(t testing.TB) {
	tw.once.Do(func() {
		tw.stop()
		select {
		case err := <-tw.done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("wrapper did not shut down")
		}
	})
}

// waitStatus polls /healthz until the reported status is want.
func (tw *testWrapper) waitStatus(t testing.TB, want string) Health {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var h Health
	for time.Now().Before(deadline) {
		h = tw.health(t)
		if h.Status == want {
			return h
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("health never reached %q; last %+v", want, h)
	return h
}

func (tw *testWrapper) health(t testing.TB) Health {
	t.Helper()
	resp, err := http.Get(tw.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if (resp.StatusCode == http.StatusOK) != (h.Status == StatusUp) {
		t.Fatalf("healthz status %d with body status %q", resp.StatusCode, h.Status)
	}
	return h
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens an SDK client session through the wrapper.
func connect(t testing.TB, tw *testWrapper, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := dial(tw, token, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func dial(tw *testWrapper, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = bearer{token, http.DefaultTransport}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: tw.URL + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
}

func callCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// structured decodes a tool result's structured content.
func structured[T any](t testing.TB, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return v
}
