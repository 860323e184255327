package discover

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/capability"
	"github.com/clawdapus/clawgo/internal/pod"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// fixedNow stamps snapshots deterministically.
func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// loadPod writes a pod file into a temporary directory and loads it.
func loadPod(t *testing.T, yml string) *pod.Pod {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claw-pod.yml"), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := pod.Load(context.Background(), pod.LoadOptions{File: filepath.Join(dir, "claw-pod.yml"), Env: []string{"ECHO_BIN=" + echoBin()}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const echoPod = `
services:
  echo:
    image: clawgo/claw-mcp-stdio:dev
    environment:
      SOME_KEY: value
    x-claw:
      mcp-stdio:
        command: ${ECHO_BIN}
  other:
    image: other
`

// checkGolden compares data (the build directory and time masked) with
// testdata/name.
func checkGolden(t *testing.T, name string, data []byte) {
	t.Helper()
	data = bytes.ReplaceAll(data, []byte(binDir), []byte("$BIN"))
	data = maskTime(data)
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/discover -update)", err)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("snapshot differs from %s (run with -update to accept)\n--- got\n%s\n--- want\n%s", path, data, want)
	}
}

func maskTime(b []byte) []byte {
	const key = `"discovered_at": "`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return b
	}
	j := bytes.IndexByte(b[i+len(key):], '"')
	if j < 0 {
		return b
	}
	return append(append(append([]byte{}, b[:i+len(key)]...), "<TIME>"...), b[i+len(key)+j:]...)
}

func TestTargets(t *testing.T) {
	p := loadPod(t, echoPod)
	ts, err := Targets(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Service != "echo" || ts[0].Command != echoBin() || ts[0].Env["SOME_KEY"] != "value" || ts[0].Port != "8080" || ts[0].Path != "/mcp" {
		t.Fatalf("targets = %+v", ts)
	}
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"nope"}, `service "nope" is not in the pod`},
		{[]string{"other"}, "does not wrap a stdio MCP server"},
	} {
		if _, err := Targets(p, c.names); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Targets(%v) = %v, want %q", c.names, err, c.want)
		}
	}
	none := loadPod(t, "services:\n  other:\n    image: other\n")
	if _, err := Targets(none, nil); err == nil || !strings.Contains(err.Error(), "no service declares x-claw.mcp-stdio") {
		t.Errorf("Targets of a pod without stdio services = %v", err)
	}
}

// TestDiscoverLocal runs the real wrapper around the real claw-mcp-echo on
// the host and checks the snapshot byte for byte.
func TestDiscoverLocal(t *testing.T) {
	p := loadPod(t, echoPod)
	ts, err := Targets(p, []string{"echo"})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	res, err := Discover(context.Background(), ts[0], Options{Mode: ModeLocal, Wrapper: wrapperBin(), Now: fixedNow, Log: &logs, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot.Discovery.ToolCount != 4 || res.Snapshot.Discovery.ProtocolVersion == "" {
		t.Errorf("discovery = %+v", res.Snapshot.Discovery)
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Errorf("the wrapper was not stopped before Discover returned; its log:\n%s", logs.String())
	}
	checkGolden(t, "echo-local.golden.json", res.Data)

	rel, err := Write(p.Dir, "echo", res.Data)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(p.Dir, rel))
	if err != nil || !bytes.Equal(data, res.Data) {
		t.Fatalf("written snapshot: %v", err)
	}
	d, err := capability.ParseDescriptor(data)
	if err != nil {
		t.Fatalf("the snapshot is not a valid descriptor: %v", err)
	}
	if d.MCP == nil || d.MCP.Path != "/mcp" || d.Tool("lookup_symbol") == nil {
		t.Fatalf("descriptor = %+v", d)
	}
}

// TestDiscoverLocalBearer: a wrapper guarded by CLAW_MCP_STDIO_AUTH_TOKEN is
// listed with that token.
func TestDiscoverLocalBearer(t *testing.T) {
	p := loadPod(t, strings.Replace(echoPod, "SOME_KEY: value", "CLAW_MCP_STDIO_AUTH_TOKEN: wrapper-secret\n      CLAW_MCP_STDIO_PATH: /rpc", 1))
	ts, _ := Targets(p, nil)
	res, err := Discover(context.Background(), ts[0], Options{Mode: ModeLocal, Wrapper: wrapperBin(), Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot.MCP.Path != "/rpc" || len(res.Snapshot.Tools) != 4 {
		t.Fatalf("snapshot = %+v", res.Snapshot)
	}
	// Without the token the same wrapper refuses.
	ts[0].AuthToken = "wrong"
	if _, err := Discover(context.Background(), ts[0], Options{Mode: ModeLocal, Wrapper: wrapperBin()}); err == nil {
		t.Fatal("listing with a wrong token succeeded")
	}
}

// TestDiscoverLocalFailures: a server that exits at start or writes garbage
// fails discovery with the wrapper's reason, quickly, and nothing is left
// running.
func TestDiscoverLocalFailures(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"exits":   {[]string{"-exit-at-start", "3"}, "did not start"},
		"garbage": {[]string{"-garbage-at-start"}, "did not start"},
	} {
		t.Run(name, func(t *testing.T) {
			tg := Target{Service: "echo", Command: echoBin(), Args: c.args, Env: map[string]string{}, Port: DefaultPort, Path: DefaultPath, Dir: t.TempDir()}
			var logs bytes.Buffer
			start := time.Now()
			_, err := Discover(context.Background(), tg, Options{Mode: ModeLocal, Wrapper: wrapperBin(), Log: &logs, Timeout: time.Minute})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			var le *LogError
			if !errors.As(err, &le) || le.Logs == "" {
				t.Errorf("the error carries no wrapper output: %v", err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("failing took %s", d)
			}
			if !strings.Contains(logs.String(), "shutting down") {
				t.Errorf("the wrapper was not stopped:\n%s", logs.String())
			}
		})
	}
	t.Run("no wrapper", func(t *testing.T) {
		tg := Target{Service: "echo", Command: echoBin(), Port: DefaultPort, Path: DefaultPath, Dir: t.TempDir()}
		_, err := Discover(context.Background(), tg, Options{Mode: ModeLocal, Wrapper: filepath.Join(t.TempDir(), "absent")})
		if err == nil || !strings.Contains(err.Error(), "starting") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestDiscoverCancel: cancelling (Ctrl-C) while the server never answers
// returns promptly and still stops the wrapper.
func TestDiscoverCancel(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	tg := Target{Service: "mute", Command: sleep, Args: []string{"60"}, Env: map[string]string{}, Port: DefaultPort, Path: DefaultPath, Dir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan error, 1)
	go func() {
		_, err := Discover(ctx, tg, Options{Mode: ModeLocal, Wrapper: wrapperBin(), Log: &logs})
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "listening") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "canceled") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Discover did not return after cancellation")
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Errorf("the wrapper was not stopped:\n%s", logs.String())
	}
}

// TestStopLocal: after stop the wrapper's port is closed.
func TestStopLocal(t *testing.T) {
	tg := Target{Service: "echo", Command: echoBin(), Env: map[string]string{}, Port: DefaultPort, Path: DefaultPath, Dir: t.TempDir()}
	r, err := startLocal(context.Background(), tg, Options{Wrapper: wrapperBin()}, &tail{max: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := waitHealthy(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(r.base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("the wrapper still answers after stop")
	}
}

func TestRenderStable(t *testing.T) {
	s := &Snapshot{Version: 2, MCP: SnapshotMCP{Transport: "streamable_http", Path: "/mcp"},
		Tools: []Tool{
			{Name: "b", InputSchema: []byte(`{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"number"}}}`)},
			{Name: "a", InputSchema: []byte(`null`)},
		},
		Discovery: DiscoveryMeta{Service: "s", Command: "c", Mode: ModeLocal, DiscoveredAt: "t"}}
	first, err := s.Render()
	if err != nil {
		t.Fatal(err)
	}
	s.Tools[0], s.Tools[1] = s.Tools[1], s.Tools[0]
	second, _ := s.Render()
	if !bytes.Equal(first, second) {
		t.Fatalf("render depends on listing order:\n%s\n%s", first, second)
	}
	if !bytes.Contains(first, []byte(`"args": []`)) || bytes.Index(first, []byte(`"name": "a"`)) > bytes.Index(first, []byte(`"name": "b"`)) {
		t.Fatalf("render:\n%s", first)
	}
	bad := &Snapshot{Version: 2, MCP: SnapshotMCP{Transport: "streamable_http", Path: "/mcp"}, Tools: []Tool{{Name: "x", InputSchema: []byte(`{"type":"string"}`)}}}
	if _, err := bad.Render(); err == nil || !strings.Contains(err.Error(), "tools[0].inputSchema") {
		t.Fatalf("a non-object schema rendered: %v", err)
	}
}

func TestUsableTools(t *testing.T) {
	tools := []Tool{
		{Name: "ok", InputSchema: []byte(`{"type":"object"}`)},
		{Name: "bad name", InputSchema: []byte(`{"type":"object"}`)},
		{Name: "scalar", InputSchema: []byte(`{"type":"string"}`)},
	}
	usable, skipped := usableTools("/mcp", tools)
	if len(usable) != 1 || usable[0].Name != "ok" || len(skipped) != 2 {
		t.Fatalf("usable %v skipped %v", usable, skipped)
	}
	if !strings.Contains(skipped[0], `tool "bad name" skipped`) || !strings.Contains(skipped[1], "inputSchema") {
		t.Errorf("skipped = %q", skipped)
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{"one\n", "two\n"} {
		if _, err := Write(dir, "svc", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, Dir))
	if len(entries) != 1 || entries[0].Name() != "svc.claw-describe.json" {
		t.Fatalf("entries = %v", entries)
	}
	data, _ := os.ReadFile(filepath.Join(dir, SnapshotPath("svc")))
	if string(data) != "two\n" {
		t.Fatalf("data = %q", data)
	}
}
