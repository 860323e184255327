package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/testproc"
)

// startRedis starts a redis-server of its own on a free loopback port, or
// skips the test when the binary is not installed (.ci/run installs it).
func startRedis(t *testing.T) string {
	t.Helper()
	return testproc.Redis(t)
}

type replica struct {
	cmd  *exec.Cmd
	addr string
}

// scriptedModel is an OpenAI-format upstream that makes one hidden tool
// round per turn: to a request whose last message is the runner's it
// answers with a call of desk__trade whose id names the turn (the count of
// user messages), and once that call's result is back it answers
// "done <turn>". It keeps every request body, in order.
type scriptedModel struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newScriptedModel(t *testing.T) *scriptedModel {
	m := &scriptedModel{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		m.mu.Lock()
		m.seen = append(m.seen, string(body))
		m.mu.Unlock()
		turn := 0
		for _, msg := range req.Messages {
			if msg.Role == "user" {
				turn++
			}
		}
		w.Header().Set("Content-Type", "application/json")
		usage := `"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}`
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
			fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+
				`{"id":"call_turn%d","type":"function","function":{"name":"desk__trade","arguments":"{}"}}]},"finish_reason":"tool_calls"}],%s}`, turn, turn, usage)
			return
		}
		fmt.Fprintf(w, `{"id":"d%d","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done %d"},"finish_reason":"stop"}],%s}`, turn, turn, usage)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// mark is where the next request's body will be in seen.
func (m *scriptedModel) mark() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen)
}

// at is the body of request i.
func (m *scriptedModel) at(t *testing.T, i int) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if i >= len(m.seen) {
		t.Fatalf("the model got %d requests, not %d", len(m.seen), i+1)
	}
	return m.seen[i]
}

// Three cllama processes share one Redis and one history directory: a
// conversation's turns land on different replicas and keep their hidden
// rounds, a replica killed right after answering loses nothing it
// acknowledged, two replicas ending identical conversations at once leave
// the key ambiguous on all of them, and the history of all replicas reads
// as one.
func TestReplicasShareContinuity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, runs three processes and redis-server")
	}
	redisURL := startRedis(t)
	model := newScriptedModel(t)
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
			"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+model.srv.URL+"/v1")
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
			t.Error(err)
			return ""
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Errorf("%s: %d %s", r.addr, res.StatusCode, body)
		}
		return string(body)
	}
	// restored lists the hidden tool calls the model's first call of a
	// turn was given back (the ids of tool results in its messages).
	restored := func(body string) []string {
		var req struct {
			Messages []struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatalf("the model's request: %v", err)
		}
		var ids []string
		for _, m := range req.Messages {
			if m.Role == "tool" {
				ids = append(ids, m.ToolCallID)
			}
		}
		return ids
	}

	// Turn 1 on replica A: a hidden round (call_turn1), then "done 1".
	if out := chat(a, `[{"role":"user","content":"hi"}]`); !strings.Contains(out, `"done 1"`) {
		t.Fatalf("turn 1: %s", out)
	}
	// Turn 2 on replica B: turn 1's round comes back from Redis before
	// the model's first call; B makes a round of its own (call_turn2).
	turn2 := `[{"role":"user","content":"hi"},{"role":"assistant","content":"done 1"},{"role":"user","content":"and now?"}]`
	first := model.mark()
	if out := chat(b, turn2); !strings.Contains(out, `"done 2"`) {
		t.Fatalf("turn 2: %s", out)
	}
	if got := restored(model.at(t, first)); !slices.Equal(got, []string{"call_turn1"}) {
		t.Fatalf("turn 2 on replica B was given back %v, want [call_turn1]; the model got:\n%s", got, model.at(t, first))
	}
	// B dies the moment it has answered, as a crash would take it.
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	_ = b.cmd.Wait()
	// Turn 3 on replica C: both earlier rounds, turn 2's included (B
	// acknowledged it to the runner, so it must be in Redis).
	turn3 := `[{"role":"user","content":"hi"},{"role":"assistant","content":"done 1"},{"role":"user","content":"and now?"},{"role":"assistant","content":"done 2"},{"role":"user","content":"bye"}]`
	first = model.mark()
	if out := chat(c, turn3); !strings.Contains(out, `"done 3"`) {
		t.Fatalf("turn 3: %s", out)
	}
	if got := restored(model.at(t, first)); !slices.Equal(got, []string{"call_turn1", "call_turn2"}) {
		t.Fatalf("turn 3 on replica C was given back %v, want [call_turn1 call_turn2]; the model got:\n%s", got, model.at(t, first))
	}

	// Two conversations that read the same, answer included, end at
	// once on A and C: the key is claimed twice, across processes, and
	// neither conversation's round is given back, on any replica.
	var wg sync.WaitGroup
	for _, r := range []*replica{a, c} {
		wg.Add(1)
		go func() { defer wg.Done(); chat(r, `[{"role":"user","content":"twin"}]`) }()
	}
	wg.Wait()
	for _, r := range []*replica{a, c} {
		first = model.mark()
		chat(r, `[{"role":"user","content":"twin"},{"role":"assistant","content":"done 1"},{"role":"user","content":"next"}]`)
		if got := restored(model.at(t, first)); len(got) != 0 {
			t.Fatalf("a key two conversations ended at gave back %v on %s", got, r.addr)
		}
	}

	// History: one file per replica, read as one, in time order.
	es, paths, err := history.ReadAgent(histDir, "analyst")
	if err != nil || len(paths) != 3 || len(es) != 7 {
		t.Fatalf("history: %d entries from %v: %v", len(es), paths, err)
	}
	for i := 1; i < len(es); i++ {
		if es[i].Timestamp.Before(es[i-1].Timestamp) {
			t.Fatal("merged history is not in time order")
		}
	}
}
