package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/histindex"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
)

const (
	operatorToken = "op-secret-token-0123456789"
	agentToken    = "analyst:agent-secret-abcdef"
	hostileTurn   = "h_hostile"
	roundTurn     = "h_rounds"
)

// hostileAnswer is model output that would run script if a page put it in
// as markup.
const hostileAnswer = `<script>document.title="pwned";window.pwned=1</script><img src=x onerror="window.pwned=2;document.title='pwned'">`

// staticAgents is a compiled pod for tests.
type staticAgents map[string]AgentInfo

func (s staticAgents) IDs() []string {
	var out []string
	for id := range s {
		out = append(out, id)
	}
	return out
}

func (s staticAgents) Agent(id string) (AgentInfo, bool) { a, ok := s[id]; return a, ok }

var pod = staticAgents{
	"analyst": {ID: "analyst", Service: "analyst", Type: "openclaw", Tools: []ToolGrant{{Name: "desk.quote", Mode: "mediated"}, {Name: "desk.trade", Mode: "mediated", When: []string{"market-open"}}},
		Rules: []manifest.Rule{{ID: "market-open", When: `time.hour >= 9`, Source: "claw-pod.yml x-claw.tools[1].when"}},
		Feeds: []FeedInfo{{Name: "market", Source: "desk", Path: "/feed", TTL: 60}}},
	"trader": {ID: "trader", Service: "trader", Type: "generic", Tools: []ToolGrant{{Name: "desk.trade", Mode: "native"}}},
	"helper": {ID: "helper", Service: "helper", Type: "generic"},
}

func line(e history.Entry, cost string) map[string]any {
	b, _ := json.Marshal(e)
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	_ = d.Decode(&m)
	if cost != "" {
		m["cost_usd"] = json.Number(cost)
	}
	return m
}

// seedHistory writes a small history: turns with hidden rounds, a native
// call, a failed call, and a turn whose model output is hostile.
func seedHistory(t testing.TB, dir string, now time.Time) {
	t.Helper()
	start := int64(0)
	late := int64(40)
	write := func(e history.Entry, cost string) {
		appendLine(t, dir, e.AgentID, line(e, cost))
	}
	for i := range 30 {
		at := now.Add(-time.Duration(30-i) * 2 * time.Minute)
		write(history.Entry{ID: "h_a" + string(rune('a'+i%26)) + string(rune('a'+i/26)), AgentID: "analyst", Timestamp: at, Format: "openai", Model: "fake/gpt", Status: "ok", StatusCode: 200, LatencyMS: 200 + int64(i),
			Request:  json.RawMessage(`{"model":"fake/gpt","messages":[{"role":"user","content":"quote X"}]}`),
			Response: json.RawMessage(`{"choices":[{"message":{"role":"assistant","content":"X is 10"}}]}`),
			Usage:    history.Usage{PromptTokens: 100 + i, CompletionTokens: 20, TotalRounds: 1}}, "0.0021")
	}
	write(history.Entry{ID: roundTurn, AgentID: "analyst", Timestamp: now.Add(-30 * time.Second), Format: "openai", Model: "fake/gpt", Status: "ok", StatusCode: 200, LatencyMS: 900,
		Request:  json.RawMessage(`{"model":"fake/gpt","messages":[{"role":"user","content":"buy 5 X if cheap"}]}`),
		Response: json.RawMessage(`{"choices":[{"message":{"role":"assistant","content":"Bought 5 X at 10."}}]}`),
		Usage:    history.Usage{PromptTokens: 800, CompletionTokens: 60, TotalRounds: 3},
		ToolTrace: []history.Round{
			{Round: 1, RoundUsage: history.Usage{PromptTokens: 300, CompletionTokens: 20}, ToolCalls: []history.ToolCall{
				{Name: "desk.quote", Service: "desk", Mode: "mediated", StartMS: &start, LatencyMS: 35, Arguments: json.RawMessage(`{"symbol":"X","claw_id":"analyst"}`), Result: json.RawMessage(`{"ok":true,"data":{"price":10}}`)},
				{Name: "desk.quote", Service: "desk", Mode: "mediated", StartMS: &start, LatencyMS: 20, Arguments: json.RawMessage(`{"symbol":"Y","claw_id":"analyst"}`), Result: json.RawMessage(`{"ok":false,"error":{"code":"upstream_error","message":"desk said 503"}}`)},
			}},
			{Round: 2, RoundUsage: history.Usage{PromptTokens: 500, CompletionTokens: 40}, ToolCalls: []history.ToolCall{
				{Name: "desk.trade", Service: "desk", Mode: "mediated", StartMS: &late, LatencyMS: 120, Arguments: json.RawMessage(`{"symbol":"X","qty":5,"claw_id":"analyst"}`), Result: json.RawMessage(`{"ok":true,"data":{"filled":5}}`)},
			}},
		}}, "0.0135")
	write(history.Entry{ID: hostileTurn, AgentID: "analyst", Timestamp: now.Add(-20 * time.Second), Format: "openai", Model: "fake/gpt", Status: "ok", StatusCode: 200, LatencyMS: 300,
		Request:  json.RawMessage(`{"model":"fake/gpt","messages":[{"role":"user","content":"say something"}]}`),
		Response: mustJSON(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": hostileAnswer}}}}),
		Usage:    history.Usage{PromptTokens: 10, CompletionTokens: 50, TotalRounds: 1}}, "")
	write(history.Entry{ID: "h_native", AgentID: "trader", Timestamp: now.Add(-10 * time.Second), Format: history.FormatMCP, Model: "", Status: "ok", StatusCode: 200, LatencyMS: 60,
		Request: json.RawMessage(`{"name":"desk.trade","arguments":{"symbol":"X","qty":1}}`),
		ToolTrace: []history.Round{{Round: 0, ToolCalls: []history.ToolCall{{Name: "desk.trade", Service: "desk", Mode: "native", LatencyMS: 60,
			Arguments: json.RawMessage(`{"symbol":"X","qty":1,"claw_id":"trader"}`), Result: json.RawMessage(`{"ok":true,"data":{"filled":1}}`)}}}}}, "")
	for i := range 5 {
		write(history.Entry{ID: "h_t" + string(rune('a'+i)), AgentID: "trader", Timestamp: now.Add(-time.Duration(5-i) * 7 * time.Minute), Format: "anthropic", Model: "fake/claude", Status: "ok", StatusCode: 200, LatencyMS: 400,
			Request: json.RawMessage(`{"model":"fake/claude","messages":[]}`), Response: json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`),
			Usage: history.Usage{PromptTokens: 50, CompletionTokens: 5}}, "0.0400")
	}
}

func mustJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSpace(buf.Bytes())
}

// appendLine appends one history line as cllama writes it, with the
// members spend accounting adds (cost_usd) when given.
func appendLine(t testing.TB, dir, agent string, v any) {
	t.Helper()
	// As a provider sends it: no HTML escaping of the bodies.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	p := filepath.Join(dir, agent, history.FileName)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// fakeApprovals is an approvals queue for the page's buttons.
type fakeApprovals struct {
	mu      sync.Mutex
	pending []Approval
	decided map[string]bool
}

func (f *fakeApprovals) Pending(context.Context) ([]Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Approval(nil), f.pending...), nil
}

func (f *fakeApprovals) Decide(_ context.Context, id string, approve bool, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, p := range f.pending {
		if p.ID == id {
			f.pending = append(f.pending[:i], f.pending[i+1:]...)
			f.decided[id] = approve
			return nil
		}
	}
	return context.Canceled
}

// testMux is the admin listener's public side for tests.
type testMux struct{ *http.ServeMux }

func (m testMux) HandlePublic(p string, h http.Handler) { m.Handle(p, h) }

type rig struct {
	srv     *httptest.Server
	console *Console
	index   *histindex.Index
	hist    string
	now     time.Time
}

func newRig(t testing.TB, approvals Approvals) *rig {
	t.Helper()
	return newRigWith(t, func(o *Options) { o.Approvals = approvals })
}

// newRigWith is newRig with more options set by more.
func newRigWith(t testing.TB, more func(*Options)) *rig {
	t.Helper()
	now := time.Now().UTC()
	hist := t.TempDir()
	seedHistory(t, hist, now)
	x, err := histindex.Open(histindex.Options{HistoryDir: hist, Path: filepath.Join(t.TempDir(), "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	if _, err := x.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := Options{Pod: "trading-desk", Index: x, Agents: pod, VerifyToken: func(tok string) bool { return tok == operatorToken }}
	more(&o)
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	mux := testMux{http.NewServeMux()}
	c.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before srv.Close: the live streams end with Run
	go c.Run(ctx)
	select { // the counters hold the seeded history before a test reads them
	case <-c.seeded:
	case <-time.After(10 * time.Second):
		t.Fatal("the live counters were not seeded from history")
	}
	return &rig{srv: srv, console: c, index: x, hist: hist, now: now}
}

func client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// login logs c in and returns the session's CSRF token.
func (r *rig) login(t testing.TB, c *http.Client, token string) (*http.Response, string) {
	t.Helper()
	resp, body := get(t, c, r.srv.URL+"/login")
	if resp.StatusCode != 200 {
		t.Fatalf("login page: %d", resp.StatusCode)
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("login page without a CSRF token")
	}
	resp, err := c.PostForm(r.srv.URL+"/login", url.Values{"csrf": {m[1]}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return resp, ""
	}
	_, home := get(t, c, r.srv.URL+"/")
	m = csrfField.FindStringSubmatch(home)
	if m == nil {
		t.Fatal("home page without a CSRF token")
	}
	return resp, m[1]
}

func get(t testing.TB, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, sb.String()
}
