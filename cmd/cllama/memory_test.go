package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkLargeBodiesRSS is a load run of the real binary: sixteen
// agents' requests of 30 MiB at once, passthrough, against a provider that
// answers after reading the body. It prints cllama's resident memory at
// rest and at its peak (VmHWM), and how many requests the in-flight body
// budget turned away, for the default budget and for one large enough to
// admit them all (what cllama did before it had one).
//
//	go test -run '^$' -bench LargeBodiesRSS -benchtime 1x ./cmd/cllama/
func BenchmarkLargeBodiesRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "cllama")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	// One server is the provider and the tool service (/ping).
	svc := httptest.NewServer(http.HandlerFunc(floorService))
	b.Cleanup(svc.Close)
	// The same agents with a managed tool: their requests go through the
	// tool loop (one hidden round).
	mediatedCtx := filepath.Join(dir, "context-mediated")
	write(b, filepath.Join(mediatedCtx, "a0", "metadata.json"), `{"token":"a0:s"}`)
	write(b, filepath.Join(mediatedCtx, "a0", "tools.json"), `{"version":1,"tools":[{"name":"desk.ping","description":"ping","inputSchema":{"type":"object"},
	 "execution":{"transport":"http","service":"desk","base_url":"`+svc.URL+`","method":"POST","path":"/ping"}}]}`)
	const agents, size = 16, 30 << 20
	for i := range agents {
		write(b, filepath.Join(dir, "context", fmt.Sprintf("a%d", i), "metadata.json"), fmt.Sprintf(`{"token":"a%d:s"}`, i))
	}
	write(b, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"`+svc.URL+`/v1","api_key":"k"}}}`)
	body := append([]byte(`{"model":"fake/m","messages":[{"role":"user","content":"`), bytes.Repeat([]byte("x"), size)...)
	body = append(body, `"}]}`...)

	// One request alone: its peak above rest is what a request of this
	// size costs (the target: near 1–2× the body).
	// With history on, the request is also written to the agent's history
	// file: from the request's own bytes, not a copy of them.
	for _, tc := range []struct {
		name, ctx string
		history   bool
	}{
		{"passthrough/history=false", "context", false},
		{"passthrough/history=true", "context", true},
		{"mediated/history=true", "context-mediated", true},
	} {
		history := tc.history
		b.Run("one-request/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				env := []string{"CLAW_CONTEXT_ROOT=" + filepath.Join(dir, tc.ctx), "CLAW_AUTH_DIR=" + filepath.Join(dir, "auth"), "CLLAMA_MAX_BODY_BYTES=" + strconv.Itoa(size+1<<20)}
				if history {
					env = append(env, "CLAW_SESSION_HISTORY_DIR="+b.TempDir())
				}
				rest, peak, _ := largeBodyRun(b, bin, env, body, 1)
				b.ReportMetric(float64(peak-rest)/(1<<20), "added-MiB")
				b.ReportMetric(float64(peak-rest)/float64(size), "x-body")
			}
		})
	}
	for _, budget := range []string{"default", strconv.Itoa(agents * (size + 1<<20))} {
		b.Run("budget="+budget, func(b *testing.B) {
			for b.Loop() {
				env := []string{"CLAW_CONTEXT_ROOT=" + filepath.Join(dir, "context"), "CLAW_AUTH_DIR=" + filepath.Join(dir, "auth"), "CLLAMA_MAX_BODY_BYTES=" + strconv.Itoa(size+1<<20)}
				if budget != "default" {
					env = append(env, "CLLAMA_MAX_INFLIGHT_BYTES="+budget)
				}
				rest, peak, refused := largeBodyRun(b, bin, env, body, agents)
				b.ReportMetric(float64(rest)/(1<<20), "rest-MiB")
				b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
				b.ReportMetric(float64(afterRSS)/(1<<20), "after-MiB")
				b.ReportMetric(float64(refused), "refused")
			}
		})
	}
}

func largeBodyRun(b *testing.B, bin string, env []string, body []byte, n int) (rest, peak int64, refused int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stderr)
	var addr string
	for lines.Scan() {
		if _, after, ok := strings.Cut(lines.Text(), "listening on "); ok {
			addr, _, _ = strings.Cut(after, " ")
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if addr == "" {
		b.Fatal("no listening line")
	}
	rest = procStatus(b, cmd.Process.Pid, "VmRSS")
	// The peak counts from here: start-up's own (before cllama gave its
	// start-up pages back) is not the requests'.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", cmd.Process.Pid), []byte("5"), 0); err != nil {
		b.Fatalf("resetting the peak: %v", err)
	}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", fmt.Sprintf("Bearer a%d:s", i))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusServiceUnavailable {
				mu.Lock()
				refused++
				mu.Unlock()
			} else if res.StatusCode != http.StatusOK {
				b.Errorf("status %d", res.StatusCode)
			}
		}()
	}
	wg.Wait()
	peak = procStatus(b, cmd.Process.Pid, "VmHWM")
	// What is left two seconds after the spike (cllama gives the memory
	// of a drained spike back to the OS).
	time.Sleep(2 * time.Second)
	afterRSS = procStatus(b, cmd.Process.Pid, "VmRSS")
	return rest, peak, refused
}

// afterRSS is the resident memory largeBodyRun saw two seconds after its
// load.
var afterRSS int64

// procStatus reads a kB figure of /proc/<pid>/status, in bytes.
func procStatus(b *testing.B, pid int, key string) int64 {
	n, err := statusKB(pid, key)
	if err != nil {
		b.Fatal(err)
	}
	return n
}
