package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
)

// TestSIGTERMUnderLoadKeepsEveryAnsweredLine runs the real binary under
// 50 concurrent conversations (ten agents, five each) and sends it SIGTERM
// mid-load. Every request the runner got a 200 for has its history line;
// every line is complete; each conversation's turns are in order in its
// agent's file; and cllama exits 0.
func TestSIGTERMUnderLoadKeepsEveryAnsweredLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it under load")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// Under `go test -race` the binary is built with the race detector
	// too: the history writer is exercised by 50 concurrent conversations.
	bin := buildCllama(ctx, t, dir)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(15 * time.Millisecond) // requests are in flight when SIGTERM comes
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	defer up.Close()
	const agents, convs = 10, 5
	for a := range agents {
		write(t, filepath.Join(dir, "context", fmt.Sprintf("a%d", a), "metadata.json"), fmt.Sprintf(`{"token":"a%d:s"}`, a))
	}
	write(t, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"`+up.URL+`/v1","api_key":"k"}}}`)
	histDir := filepath.Join(dir, "history")
	p := startCllama(ctx, t, bin, "CLAW_CONTEXT_ROOT="+filepath.Join(dir, "context"), "CLAW_AUTH_DIR="+filepath.Join(dir, "auth"),
		"CLAW_SESSION_HISTORY_DIR="+histDir)
	addr := p.addr

	// answered[id] is the conversation and turn of a request answered 200.
	type turn struct{ agent, conv, turn int }
	var (
		mu       sync.Mutex
		answered = map[string]turn{}
		wg       sync.WaitGroup
	)
	stop := make(chan struct{})
	client := &http.Client{Timeout: 30 * time.Second}
	for a := range agents {
		for c := range convs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var msgs []string
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"a%d c%d t%d"}`, a, c, k))
					body := `{"model":"fake/m","messages":[` + strings.Join(msgs, ",") + `]}`
					req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
					req.Header.Set("Authorization", fmt.Sprintf("Bearer a%d:s", a))
					res, err := client.Do(req)
					if err != nil {
						return // cllama is shutting down
					}
					_, rerr := io.ReadAll(res.Body)
					res.Body.Close()
					if rerr != nil || res.StatusCode != http.StatusOK {
						return
					}
					mu.Lock()
					answered[res.Header.Get("X-Request-Id")] = turn{a, c, k}
					mu.Unlock()
					msgs = append(msgs, `{"role":"assistant","content":"ok"}`)
				}
			}()
		}
	}
	// SIGTERM once every conversation is a few turns in.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(answered)
		mu.Unlock()
		if n >= 3*agents*convs {
			break
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, werr := p.wait()
	close(stop)
	wg.Wait()
	if werr != nil || strings.Contains(rest, "DATA RACE") {
		t.Fatalf("exit after SIGTERM: %v\n%s", werr, rest)
	}
	if len(answered) < 3*agents*convs {
		t.Fatalf("only %d requests answered before SIGTERM: not a load", len(answered))
	}

	seen := map[string]bool{}
	for a := range agents {
		agent := fmt.Sprintf("a%d", a)
		paths, err := history.Paths(histDir, agent)
		if err != nil || len(paths) == 0 {
			t.Fatalf("%s: history files %v, %v", agent, paths, err)
		}
		for _, p := range paths {
			// An agent's concurrent exchanges may be spread over several
			// files (CLLAMA_HISTORY_FILES): each file is in order, and so
			// is the agent's history read whole (below).
			last := map[int]int{} // conversation → last turn seen in the file
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > 0 && data[len(data)-1] != '\n' {
				t.Fatalf("%s does not end with a complete line", p)
			}
			for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
				var e history.Entry
				if err := json.Unmarshal(line, &e); err != nil {
					t.Fatalf("%s line %d is not a complete entry: %v", p, i+1, err)
				}
				tu, ok := answered[e.ID]
				if !ok {
					continue // answered, but the runner's read failed as cllama closed
				}
				if tu.agent != a {
					t.Fatalf("%s holds %s's request %s", p, agent, e.ID)
				}
				if prev, ok := last[tu.conv]; ok && tu.turn <= prev {
					t.Fatalf("%s: conversation %d turn %d recorded after turn %d", p, tu.conv, tu.turn, prev)
				}
				last[tu.conv] = tu.turn
				seen[e.ID] = true
			}
		}
		es, _, err := history.ReadAgent(histDir, agent)
		if err != nil {
			t.Fatal(err)
		}
		last := map[int]int{}
		for _, e := range es {
			if tu, ok := answered[e.ID]; ok {
				if prev, ok := last[tu.conv]; ok && tu.turn <= prev {
					t.Fatalf("%s's history read whole: conversation %d turn %d after turn %d", agent, tu.conv, tu.turn, prev)
				}
				last[tu.conv] = tu.turn
			}
		}
	}
	for id, tu := range answered {
		if !seen[id] {
			t.Errorf("request %s (agent a%d conversation %d turn %d) was answered 200 but has no history line", id, tu.agent, tu.conv, tu.turn)
		}
	}
	t.Logf("%d requests answered before and during the drain, every one in history", len(answered))
}
