package mediate

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// A mediated turn's hidden rounds count under the conversation of the
// runner's request: a budget of 10 tokens per conversation admits the
// turn's two rounds (5 tokens each), then refuses the conversation's next
// turn before any upstream call, while another conversation of the agent
// is admitted.
func TestConversationBudgetCountsAMediatedTurnsRounds(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			up := newUpstream(t, k)
			svc := newServices(t)
			dir := t.TempDir()
			root := filepath.Join(dir, "context")
			writeFile(t, filepath.Join(root, "alice", "metadata.json"), mustJSON(manifest.Metadata{Token: "alice:s3cret", Pod: "desk",
				Budget: []manifest.Budget{{Unit: "tokens", Limit: 10, Per: "conversation"}}}))
			writeFile(t, filepath.Join(root, "alice", "tools.json"), mustJSON(toolsManifest(svc.srv.URL, manifest.Policy{})))
			writeFile(t, filepath.Join(dir, "auth", "providers.json"), mustJSON(map[string]any{"providers": map[string]any{
				"scripted": map[string]any{"base_url": up.srv.URL + "/v1", "api_key": "sk-up", "auth": "bearer"}}}))
			ex := toolexec.New(toolexec.Options{})
			t.Cleanup(func() { _ = ex.Close() })
			logger := audit.New(&syncBuffer{})
			rec := recorder.New(logger, &memHistory{})
			med, err := New(Options{Runner: ex, Recorder: rec, StateDir: filepath.Join(dir, "state")})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := proxy.New(proxy.Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth"), Pod: "desk"},
				proxy.Options{Recorder: rec, Mediator: med, AgentCheckInterval: -1,
					Spend: proxy.SpendOptions{Pricing: map[string]manifest.Price{"scripted/up-model": {Input: 1_000_000, Output: 1_000_000}}}})
			if err != nil {
				t.Fatal(err)
			}
			front := httptest.NewServer(srv)
			t.Cleanup(front.Close)
			up.script = []step{{Calls: []tcall{call("c1", echo, `{"q":"x"}`)}, Usage: u(4, 1)}, {Text: "done", Usage: u(4, 1)}, {Text: "a poem", Usage: u(4, 1)}}
			post := func(msgs ...tmsg) (int, string) {
				body := k.runnerRequest(msgs, nil, false, map[string]any{"model": "scripted/up-model"})
				req, _ := http.NewRequest(http.MethodPost, front.URL+k.path(), strings.NewReader(string(body)))
				req.Header.Set("Authorization", "Bearer alice:s3cret")
				req.Header.Set("x-api-key", "alice:s3cret")
				req.Header.Set("anthropic-version", "2023-06-01")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				return res.StatusCode, string(b)
			}
			if status, body := post(tmsg{Role: "user", Text: "plan a trip"}); status != 200 {
				t.Fatalf("first turn: %d %s", status, body)
			}
			status, body := post(tmsg{Role: "user", Text: "plan a trip"}, tmsg{Role: "assistant", Text: "done"}, tmsg{Role: "user", Text: "Lisbon"})
			if status != http.StatusPaymentRequired || !strings.Contains(body, `"per":"conversation"`) || !strings.Contains(body, `"spent":10`) {
				t.Fatalf("the conversation's second turn: %d %s", status, body)
			}
			if status, body := post(tmsg{Role: "user", Text: "write a poem"}); status != 200 {
				t.Fatalf("another conversation: %d %s", status, body)
			}
			if n := len(up.requests()); n != 3 {
				t.Fatalf("the provider saw %d calls, want 3", n)
			}
		})
	}
}
