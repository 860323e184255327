package mediate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// A mediated turn reaching its agent's limit between rounds ends with the
// budget's refusal: a 402 with its fields when no byte was sent, the
// format's in-band error event with the same fields once keepalives were;
// the round that ran is costed in the record, per round and in total.
func TestBudgetStopsAMediatedTurnBetweenRounds(t *testing.T) {
	for _, k := range kits {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", k.format(), stream), func(t *testing.T) {
				budgetTurn(t, k, stream)
			})
		}
	}
}

func budgetTurn(t *testing.T, k kit, stream bool) {
	up := newUpstream(t, k)
	// The tool answers once the runner has read a keepalive (streams), so
	// the refusal of round 2 comes after bytes were sent.
	keepalive := make(chan struct{})
	var once sync.Once
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stream {
			select {
			case <-keepalive:
			case <-time.After(10 * time.Second):
			}
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"echo":%s}`, body)
	}))
	t.Cleanup(tool.Close)
	dir := t.TempDir()
	root, histDir := filepath.Join(dir, "context"), filepath.Join(dir, "history")
	// Five tokens a day: round 1 (4 in + 1 out) is admitted and spends
	// them; round 2 is refused.
	writeFile(t, filepath.Join(root, "alice", "metadata.json"), mustJSON(manifest.Metadata{Token: "alice:s3cret", Pod: "desk",
		Budget: []manifest.Budget{{Unit: "tokens", Limit: 5, Per: "day"}}}))
	writeFile(t, filepath.Join(root, "alice", "tools.json"), mustJSON(toolsManifest(tool.URL, manifest.Policy{})))
	writeFile(t, filepath.Join(dir, "auth", "providers.json"), mustJSON(map[string]any{"providers": map[string]any{
		"scripted": map[string]any{"base_url": up.srv.URL + "/v1", "api_key": "sk-up", "auth": "bearer"}}}))
	hist, err := history.NewWriter(histDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hist.Close() })
	ex := toolexec.New(toolexec.Options{})
	t.Cleanup(func() { _ = ex.Close() })
	auditBuf := &syncBuffer{}
	logger := audit.New(auditBuf)
	rec := recorder.New(logger, hist)
	med, err := New(Options{Runner: ex, Recorder: rec, StateDir: filepath.Join(dir, "state"), KeepaliveInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// $1 per 1M tokens in and out: round 1 costs 5 µUSD.
	srv, err := proxy.New(proxy.Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth"), HistoryDir: histDir, Pod: "desk"},
		proxy.Options{Recorder: rec, Mediator: med, AgentCheckInterval: -1,
			Spend: proxy.SpendOptions{Pricing: map[string]manifest.Price{"scripted/up-model": {Input: 1_000_000, Output: 1_000_000, CachedInput: 1_000_000, CacheWrite: 1_000_000}}}})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(srv)
	t.Cleanup(front.Close)
	up.script = []step{{Calls: []tcall{call("c1", echo, `{"q":"x"}`)}, Usage: u(4, 1)}, {Text: "never", Usage: u(6, 2)}}

	body := k.runnerRequest([]tmsg{{Role: "user", Text: "hi"}}, nil, stream, map[string]any{"model": "scripted/up-model"})
	req, _ := http.NewRequest(http.MethodPost, front.URL+k.path(), strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer alice:s3cret")
	req.Header.Set("x-api-key", "alice:s3cret")
	req.Header.Set("anthropic-version", "2023-06-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var errDoc []byte
	if !stream {
		errDoc, _ = io.ReadAll(res.Body)
		if res.StatusCode != http.StatusPaymentRequired || res.Header.Get("Retry-After") == "" {
			t.Fatalf("status %d %v: %s", res.StatusCode, res.Header, errDoc)
		}
	} else {
		if res.StatusCode != 200 {
			t.Fatalf("stream status %d", res.StatusCode)
		}
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, ":") {
				once.Do(func() { close(keepalive) })
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, "budget_exceeded") {
				errDoc = []byte(d)
			}
		}
	}
	// The fields, in the error object (chat, messages) or the event
	// itself (Responses).
	var doc map[string]any
	if err := json.Unmarshal(errDoc, &doc); err != nil {
		t.Fatalf("no budget error in %q: %v", errDoc, err)
	}
	fields := doc
	if inner, ok := doc["error"].(map[string]any); ok {
		fields = inner
	}
	typ := fields["type"]
	if typ == "error" || typ == nil {
		typ = fields["code"]
	}
	if typ != "budget_exceeded" || fields["scope"] != "agent" || fields["unit"] != "tokens" || fields["per"] != "day" ||
		fields["limit"] != float64(5) || fields["spent"] != float64(5) || fields["resets_at"] == nil {
		t.Fatalf("refusal %s", errDoc)
	}
	if n := len(up.requests()); n != 1 {
		t.Fatalf("the provider saw %d calls, want round 1 only", n)
	}
	_ = hist.Close()
	raw, err := os.ReadFile(filepath.Join(histDir, "alice", "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var e history.Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	if e.StatusCode != 402 || e.CostUSD != audit.KnownCost(5) || len(e.ToolTrace) != 1 || e.ToolTrace[0].CostUSD != audit.KnownCost(5) {
		t.Fatalf("history entry %s", raw)
	}
}

// writeFile writes b to path (0600), making its directories (0700).
func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
