package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// conversationRefusal checks that resp is the 402 of alice's per:
// conversation budget: scope agent, per conversation, no reset.
func conversationRefusal(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	raw := readAll(t, resp.Body)
	var doc struct {
		Error budgetError `json:"error"`
	}
	_ = json.Unmarshal([]byte(raw), &doc)
	e := doc.Error
	if resp.StatusCode != http.StatusPaymentRequired || e.Type != "budget_exceeded" || e.Scope != "agent" || e.Unit != "requests" ||
		e.Per != "conversation" || string(e.Limit) != "2" || string(e.Spent) != "2" || e.ResetsAt != "" || resp.Header.Get("Retry-After") != "" {
		t.Fatalf("%s: %d %v %s", what, resp.StatusCode, resp.Header, raw)
	}
}

func wantOK(t *testing.T, what string, resp *http.Response) string {
	t.Helper()
	raw := readAll(t, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", what, resp.StatusCode, raw)
	}
	return raw
}

// A per: conversation budget follows a conversation across the runner's
// requests: a stateless runner resends the transcript, growing, each
// time (its system message rewritten, its first message re-serialised);
// the third request of the conversation is refused, another conversation
// of the same agent is not.
func TestConversationBudgetFollowsTheTranscript(t *testing.T) {
	turns := map[string][]string{
		pathChat: {
			`{"model":"fake/gpt-fake","messages":[{"role":"system","content":"feed v1"},{"role":"user","content":"plan a trip"}]}`,
			`{"model":"fake/gpt-fake","messages":[{"role":"system","content":"feed v2"},{"role":"user","content":[{"type":"text","text":"plan a trip"}]},{"role":"assistant","content":"where to?"},{"role":"user","content":"Lisbon"}]}`,
			`{"model":"fake/gpt-fake","messages":[{"role":"developer","content":"feed v3"},{"role":"user","content":"plan a trip"},{"role":"assistant","content":"where to?"},{"role":"user","content":"Lisbon"},{"role":"assistant","content":"when?"},{"role":"user","content":"May"}]}`,
			`{"model":"fake/gpt-fake","messages":[{"role":"system","content":"feed v3"},{"role":"user","content":"write a poem"}]}`,
		},
		pathMessages: {
			`{"model":"fakeant/claude-fake","max_tokens":64,"system":"feed v1","messages":[{"role":"user","content":"plan a trip"}]}`,
			`{"model":"fakeant/claude-fake","max_tokens":64,"system":"feed v2","messages":[{"role":"user","content":[{"type":"text","text":"plan a trip","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"where to?"},{"role":"user","content":"Lisbon"}]}`,
			`{"model":"fakeant/claude-fake","max_tokens":64,"messages":[{"role":"user","content":"plan a trip"},{"role":"assistant","content":"where to?"},{"role":"user","content":"Lisbon"},{"role":"assistant","content":"when?"},{"role":"user","content":"May"}]}`,
			`{"model":"fakeant/claude-fake","max_tokens":64,"messages":[{"role":"user","content":"write a poem"}]}`,
		},
		pathResponses: {
			`{"model":"fake/gpt-fake","store":false,"input":"plan a trip"}`,
			`{"model":"fake/gpt-fake","store":false,"input":[{"role":"developer","content":"feed"},{"role":"user","content":"plan a trip"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"where to?"}]},{"role":"user","content":"Lisbon"}]}`,
			`{"model":"fake/gpt-fake","store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"plan a trip"}]},{"role":"user","content":"May"}]}`,
			`{"model":"fake/gpt-fake","store":false,"input":"write a poem"}`,
		},
	}
	for path, bodies := range turns {
		t.Run(strings.TrimPrefix(path, "/v1/"), func(t *testing.T) {
			p := newPod(t, withPricing)
			p.up.setHandler(pricedProvider)
			p.setBudget(t, manifest.Budget{Unit: "requests", Limit: 2, Per: "conversation"})
			wantOK(t, "first request", p.post(t, path, bodies[0], "x-api-key", aliceToken))
			wantOK(t, "second request", p.post(t, path, bodies[1], "x-api-key", aliceToken))
			conversationRefusal(t, "third request of the conversation", p.post(t, path, bodies[2], "x-api-key", aliceToken))
			wantOK(t, "another conversation", p.post(t, path, bodies[3], "x-api-key", aliceToken))
			if n := len(p.up.requests()); n != 3 {
				t.Fatalf("the provider saw %d requests, want 3", n)
			}
		})
	}
}

// A Responses chain by previous_response_id is one conversation: each
// response is recorded with its conversation, so the third request of the
// chain is refused whatever it sends; a new chain is admitted. A
// provider-kept conversation ("conversation") is one too.
func TestConversationBudgetFollowsAResponsesChain(t *testing.T) {
	p := newPod(t, withPricing)
	p.up.setHandler((&storingProvider{}).ServeHTTP)
	p.setBudget(t, manifest.Budget{Unit: "requests", Limit: 2, Per: "conversation"})
	wantOK(t, "first request", p.post(t, pathResponses, `{"model":"fake/gpt-fake","input":"plan a trip"}`))
	wantOK(t, "second request", p.post(t, pathResponses, `{"model":"fake/gpt-fake","previous_response_id":"resp_1","input":"Lisbon"}`))
	conversationRefusal(t, "third request of the chain", p.post(t, pathResponses, `{"model":"fake/gpt-fake","previous_response_id":"resp_2","input":"write a poem"}`))
	wantOK(t, "a new chain", p.post(t, pathResponses, `{"model":"fake/gpt-fake","input":"write a poem"}`))
	// resp_3 started the new chain; continuing from it is its second
	// request.
	wantOK(t, "the new chain's second request", p.post(t, pathResponses, `{"model":"fake/gpt-fake","previous_response_id":"resp_3","input":"plan a trip"}`))

	wantOK(t, "conversation a", p.post(t, pathResponses, `{"model":"fake/gpt-fake","conversation":"conv_a","input":"one"}`))
	wantOK(t, "conversation a again", p.post(t, pathResponses, `{"model":"fake/gpt-fake","conversation":{"id":"conv_a"},"input":"two"}`))
	conversationRefusal(t, "conversation a, third", p.post(t, pathResponses, `{"model":"fake/gpt-fake","conversation":"conv_a","input":"three"}`))
	wantOK(t, "conversation b", p.post(t, pathResponses, `{"model":"fake/gpt-fake","conversation":"conv_b","input":"one"}`))
}
