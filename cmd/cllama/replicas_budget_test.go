package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Three cllama processes over one redis-server hold an agent to one
// budget: 30 requests spread over them at once, under a limit of 6
// requests a day, get exactly 6 answers and 24 refusals (402), whichever
// replica each reached.
func TestReplicasShareOneBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, runs three processes and redis-server")
	}
	redisURL := startRedis(t)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":100}}`)
	}))
	t.Cleanup(model.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "cllama")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctxDir := filepath.Join(dir, "context")
	write(t, filepath.Join(ctxDir, "analyst", "metadata.json"), `{"token":"analyst:s3cret","budget":[{"unit":"requests","limit":6,"per":"day"}]}`)
	write(t, filepath.Join(dir, "providers.json"), `{"providers":{"openai":{"base_url":"`+model.URL+`/v1","api_key":"sk-test"}}}`)
	start := func(id string) string {
		cmd := exec.CommandContext(ctx, bin, "-listen", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "CLAW_CONTEXT_ROOT="+ctxDir, "CLAW_AUTH_DIR="+dir, "CLAW_POD=desk",
			"CLLAMA_STATE_URL="+redisURL, "CLLAMA_REPLICA_ID="+id)
		stderr, _ := cmd.StderrPipe()
		cmd.Stdout = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := bufio.NewScanner(stderr)
		addr := ""
		for lines.Scan() {
			if _, rest, ok := strings.Cut(lines.Text(), "listening on "); ok {
				addr, _, _ = strings.Cut(rest, " ")
				break
			}
		}
		go func() {
			for lines.Scan() {
			}
		}()
		if addr == "" {
			t.Fatalf("replica %s did not start", id)
		}
		return addr
	}
	addrs := []string{start("r0"), start("r1"), start("r2")}
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions",
				strings.NewReader(`{"model":"openai/gpt-test","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer analyst:s3cret")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == 402 && !strings.Contains(string(body), `"budget_exceeded"`) {
				t.Errorf("402 without its type: %s", body)
			}
			mu.Lock()
			statuses[res.StatusCode]++
			mu.Unlock()
		}(addrs[i%3])
	}
	wg.Wait()
	if statuses[200] != 6 || statuses[402] != 24 {
		t.Fatalf("three replicas answered %v under one limit of 6 requests", statuses)
	}
}
