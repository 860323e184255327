package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/history"
)

// TestToolCallParityMediatedAndNative: the same tools, with the same
// results, reached as a model's mediated call and as a runner's native
// call on /mcp give the same envelope (truncation included) and the same
// trace entry (name, arguments as executed, result, service): one
// governed call path. desk.big's 5 KB answer is over the 1000-byte cap;
// desk.get_context declares claw_id, which the model left out.
func TestToolCallParityMediatedAndNative(t *testing.T) {
	model := &scriptedCalls{calls: []string{
		`{"id":"c1","type":"function","function":{"name":"desk__big","arguments":"{}"}}`,
		`{"id":"c2","type":"function","function":{"name":"desk__get_context","arguments":"{\"symbol\":\"ACME\"}"}}`,
	}}
	up := httptest.NewServer(model)
	defer up.Close()
	p := startParityPod(t, up.URL)

	// Native: the analyst's MCP client.
	cs := p.connect(t, "analyst:s3cret", "")
	native := map[string]string{}
	for name, args := range map[string]map[string]any{"desk__big": {}, "desk__get_context": {"symbol": "ACME"}} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		native[name] = res.Content[0].(*mcp.TextContent).Text
	}

	// Mediated: the trader's model calls the same tools.
	req, _ := http.NewRequest(http.MethodPost, p.base+"/v1/chat/completions",
		strings.NewReader(`{"model":"fake/m","messages":[{"role":"user","content":"go"}]}`))
	req.Header.Set("Authorization", "Bearer trader:s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("mediated turn: %d %s", resp.StatusCode, body)
	}
	// Each agent's own id is the only difference desk.get_context's
	// service makes.
	// A kept result's handle is random: the two differ there too.
	handles := regexp.MustCompile(`clawres_[0-9a-f]{40}`)
	same := func(s, agent string) string {
		return handles.ReplaceAllString(strings.ReplaceAll(s, `"`+agent+`"`, `"AGENT"`), "HANDLE")
	}
	mediated := model.results()
	for name, want := range map[string]string{"desk__big": mediated["c1"], "desk__get_context": mediated["c2"]} {
		if same(native[name], "analyst") != same(want, "trader") {
			t.Errorf("%s: native result\n%s\nmediated result\n%s", name, native[name], want)
		}
	}
	var big struct {
		Truncated     bool `json:"truncated"`
		OriginalBytes int  `json:"original_bytes"`
	}
	if err := json.Unmarshal([]byte(native["desk__big"]), &big); err != nil || !big.Truncated || len(native["desk__big"]) > 1000 {
		t.Fatalf("desk.big: %d bytes, %+v (cap 1000)", len(native["desk__big"]), big)
	}

	// The traces agree but for mode and timing.
	trace := func(agent string) map[string]history.ToolCall {
		out := map[string]history.ToolCall{}
		for _, e := range p.history(t, agent) {
			for _, r := range e.ToolTrace {
				for _, tc := range r.ToolCalls {
					tc.Mode, tc.LatencyMS, tc.StartMS = "", 0, nil
					out[tc.Name] = tc
				}
			}
		}
		return out
	}
	nt, mt := trace("analyst"), trace("trader")
	for _, name := range []string{"desk.big", "desk.get_context"} {
		a, _ := json.Marshal(nt[name])
		b, _ := json.Marshal(mt[name])
		if same(string(a), "analyst") != same(string(b), "trader") || nt[name].Name == "" {
			t.Errorf("%s trace: native %s\nmediated %s", name, a, b)
		}
	}
	if got := string(nt["desk.get_context"].Arguments); got != `{"claw_id":"analyst","symbol":"ACME"}` {
		t.Errorf("the trace omits the claw_id the service received: %s", got)
	}
}

// startParityPod is startMCPPod with a second agent, trader, holding the
// same tools in mediated mode, and a provider at upURL.
func startParityPod(t *testing.T, upURL string) *mcpPod {
	t.Helper()
	return startMCPPodWith(t, func(ctxDir, authDir, svcURL string) {
		write(t, filepath.Join(ctxDir, "trader", "metadata.json"), `{"token":"trader:s3cret"}`)
		write(t, filepath.Join(ctxDir, "trader", "tools.json"), strings.ReplaceAll(nativeTools(svcURL), `"mode":"native"`, `"mode":"mediated"`))
		write(t, filepath.Join(ctxDir, "trader", "service-auth", "desk.json"), `{"service":"desk","auth_type":"bearer","token":"projected-for-trader"}`)
		write(t, filepath.Join(authDir, "providers.json"), fmt.Sprintf(`{"providers":{"fake":{"base_url":%q,"api_key":"k","auth":"bearer"}}}`, upURL+"/v1"))
	})
}

// scriptedCalls is an OpenAI-format provider: its first answer calls
// every tool of calls, its second is text; it keeps the tool results it
// was sent, by call id.
type scriptedCalls struct {
	calls []string
	mu    sync.Mutex
	n     int
	seen  map[string]string
}

func (s *scriptedCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	s.mu.Lock()
	s.n++
	n := s.n
	if s.seen == nil {
		s.seen = map[string]string{}
	}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			s.seen[m.ToolCallID] = m.Content
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	msg := `{"role":"assistant","content":"done"}`
	finish := "stop"
	if n == 1 {
		msg = `{"role":"assistant","content":null,"tool_calls":[` + strings.Join(s.calls, ",") + `]}`
		finish = "tool_calls"
	}
	fmt.Fprintf(w, `{"id":"x%d","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, n, msg, finish)
}

func (s *scriptedCalls) results() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.seen {
		out[k] = v
	}
	return out
}
