package proxy

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
)

// countUpstream answers token counts with a fixed figure and generations
// as the default provider does.
func countUpstream(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/messages/count_tokens") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"input_tokens":42}`))
		return
	}
	defaultProvider(w, r)
}

// The official Anthropic SDK counts tokens through cllama (issue 12
// "Endpoints runners call"): a bare model name routes as for messages, the
// provider's key replaces the agent's, and the count is relayed. A count is
// audited but is neither usage nor session history.
func TestSDKCountsTokens(t *testing.T) {
	p := newPod(t, withDefaults)
	p.up.setHandler(countUpstream)
	ant := anthropicClient(p, aliceToken)
	n, err := ant.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model:    "claude-sonnet-4-5",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil || n.InputTokens != 42 {
		t.Fatalf("count: %v %+v", err, n)
	}
	up := p.up.requests()
	if len(up) != 1 || up[0].Path != "/v1/messages/count_tokens" || !strings.Contains(string(up[0].Body), `"model":"claude-sonnet-4-5"`) ||
		up[0].Header.Get("X-Api-Key") != providerKey {
		t.Fatalf("upstream saw %+v", up)
	}
	assertNoAgentCredential(t, up[0])
	ev := p.audit.waitEvent(t, audit.TypeResponse)
	if ev.StatusCode != 200 || ev.TokensIn != nil || ev.TokensOut != nil {
		t.Errorf("response event %+v: a count is no usage", ev)
	}
	if entries, _ := os.ReadDir(filepath.Join(p.historyDir, "alice")); len(entries) > 0 {
		t.Errorf("a token count was written to session history: %v", entries)
	}
	// Refused like every route: a wrong token never reaches the provider.
	wrong := anthropicClient(p, "alice:wrong")
	if _, err := wrong.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model: "claude-sonnet-4-5", Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}); err == nil || len(p.up.requests()) != 1 {
		t.Fatalf("wrong token: %v, upstream saw %d", err, len(p.up.requests()))
	}
}

// presenter is a mediator that presents a fixed body for counting.
var _ exchange.Presenter = presenter{}

type presenter struct {
	mediatorFunc
	body string
}

func (p presenter) Present(_ context.Context, x *exchange.Exchange) ([]byte, error) {
	return []byte(p.body), nil
}

// An agent with managed tools counts what cllama would send: the body its
// mediator presents (tools added, hidden rounds restored), not the
// runner's.
func TestCountOfManagedAgentIsOfWhatCllamaSends(t *testing.T) {
	const presented = `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"svc__tool"}]}`
	p := newPod(t, withDefaults, func(_ *Config, o *Options) {
		o.Mediator = presenter{body: presented, mediatorFunc: func(w http.ResponseWriter, r *http.Request, x *exchange.Exchange) {
			t.Error("a count must not run the tool loop")
		}}
	})
	p.up.setHandler(countUpstream)
	writeFile(t, filepath.Join(p.root, "alice", "tools.json"), managedTools)
	resp := p.post(t, "/v1/messages/count_tokens", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`,
		"anthropic-version", "2023-06-01")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	up := p.up.requests()
	if len(up) != 1 || string(up[0].Body) != presented {
		t.Fatalf("upstream saw %+v, want the presented body", up)
	}
}
