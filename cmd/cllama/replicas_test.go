package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
)

// startRedis starts a redis-server of its own on a free loopback port, or
// skips the test when the binary is not installed (.ci/run installs it).
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server); .ci/run installs it")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "redis://" + addr + "/0"
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("redis-server did not start")
	return ""
}

type replica struct {
	cmd  *exec.Cmd
	addr string
}

// Three cllama processes share one Redis and one history directory: a
// conversation's turns land on different replicas and keep their hidden
// rounds, a replica killed right after answering loses nothing it
// acknowledged, and the history of all replicas reads as one.
func TestReplicasShareContinuity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, runs three processes and redis-server")
	}
	redisURL := startRedis(t)
	var mu sync.Mutex
	var seen []string
	inner := fakeProvider(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, string(body))
		mu.Unlock()
		res, err := http.Post(inner.URL+r.URL.Path, "application/json", strings.NewReader(string(body)))
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, res.Body)
	}))
	defer up.Close()
	svc := newToolService(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "cllama")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctxDir := filepath.Join(dir, "context")
	write(t, filepath.Join(ctxDir, "analyst", "metadata.json"), `{"token":"analyst:s3cret"}`)
	write(t, filepath.Join(ctxDir, "analyst", "tools.json"), nativeTools(svc.srv.URL))
	histDir := filepath.Join(dir, "history")
	start := func(id string) *replica {
		cmd := exec.CommandContext(ctx, bin, "-listen", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "CLAW_CONTEXT_ROOT="+ctxDir, "CLAW_AUTH_DIR="+dir, "CLAW_POD=desk",
			"CLAW_SESSION_HISTORY_DIR="+histDir, "CLLAMA_HISTORY_FSYNC=always", "CLLAMA_STATE_URL="+redisURL, "CLLAMA_REPLICA_ID="+id,
			"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+up.URL+"/v1")
		stderr, _ := cmd.StderrPipe()
		cmd.Stdout = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := bufio.NewScanner(stderr)
		r := &replica{cmd: cmd}
		for lines.Scan() {
			if _, rest, ok := strings.Cut(lines.Text(), "listening on "); ok {
				r.addr, _, _ = strings.Cut(rest, " ")
				break
			}
		}
		go func() {
			for lines.Scan() {
			}
		}()
		if r.addr == "" {
			t.Fatalf("replica %s did not start", id)
		}
		return r
	}
	a, b, c := start("r0"), start("r1"), start("r2")
	chat := func(r *replica, msgs string) string {
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.addr+"/v1/chat/completions",
			strings.NewReader(`{"model":"openai/gpt-test","messages":`+msgs+`}`))
		req.Header.Set("Authorization", "Bearer analyst:s3cret")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", r.addr, res.StatusCode, body)
		}
		return string(body)
	}
	// Turn 1 on replica A: a hidden round (desk.trade) then "done".
	if out := chat(a, `[{"role":"user","content":"hi"}]`); !strings.Contains(out, `"done"`) {
		t.Fatalf("turn 1: %s", out)
	}
	// A dies at once, as a crash would take it.
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	_ = a.cmd.Wait()
	// Turn 2 on replica B: the hidden round comes back from Redis.
	turn2 := `[{"role":"user","content":"hi"},{"role":"assistant","content":"done"},{"role":"user","content":"and now?"}]`
	mu.Lock()
	first := len(seen)
	mu.Unlock()
	chat(b, turn2)
	// The first model call of turn 2 (a tool round made anew would show
	// tool results only in a later call).
	mu.Lock()
	last := seen[first]
	mu.Unlock()
	if !strings.Contains(last, `"role":"tool"`) || !strings.Contains(last, "desk__trade") || !strings.Contains(last, "and now?") {
		t.Fatalf("turn 2 on another replica lost the hidden round; the provider got:\n%s", last)
	}
	// Turn 3 on replica C: turn 2 added nothing hidden, turn 1's round
	// is still restored.
	mu.Lock()
	first = len(seen)
	mu.Unlock()
	chat(c, `[{"role":"user","content":"hi"},{"role":"assistant","content":"done"},{"role":"user","content":"and now?"},{"role":"assistant","content":"done"},{"role":"user","content":"bye"}]`)
	mu.Lock()
	last = seen[first]
	mu.Unlock()
	if !strings.Contains(last, `"role":"tool"`) {
		t.Fatalf("turn 3 on a third replica lost the hidden round:\n%s", last)
	}
	// History: one file per replica, read as one.
	es, _, paths, err := history.ReadAgent(histDir, "analyst")
	if err != nil || len(paths) != 3 || len(es) != 3 {
		t.Fatalf("history: %d entries from %v: %v", len(es), paths, err)
	}
	for i := 1; i < len(es); i++ {
		if es[i].Timestamp.Before(es[i-1].Timestamp) {
			t.Fatal("merged history is not in time order")
		}
	}
}
