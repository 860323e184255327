package mediate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// Anthropic reports cached prompt tokens apart from input_tokens. A mediated
// turn must sum them over every round like the other counts (the runner's
// final usage), and count them in tokens_in and the history's prompt tokens
// as the passthrough path does (README "Audit").
func TestAnthropicCachedTokensSummedOverRounds(t *testing.T) {
	k := anthropicKit{}
	h := newHarness(t, k, harnessOptions{})
	usage := `"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":3}`
	h.up.script = []step{
		{Raw: `{"id":"msg_a","type":"message","role":"assistant","model":"up-model","content":[{"type":"tool_use","id":"c1","name":"` + echo + `","input":{"q":"a"}}],"stop_reason":"tool_use","stop_sequence":null,` + usage + `}`},
		{Raw: `{"id":"msg_b","type":"message","role":"assistant","model":"up-model","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","stop_sequence":null,` + usage + `}`},
	}
	res := h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, false, nil))
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	var got struct {
		Usage map[string]int `json:"usage"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"input_tokens": 20, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 200, "output_tokens": 6}
	for k, v := range want {
		if got.Usage[k] != v {
			t.Errorf("final usage %s = %d, want %d (usage %v)", k, got.Usage[k], v, got.Usage)
		}
	}
	h.waitEntries(t, 1)
	e := lastEntry(t, h)
	if e.Usage.PromptTokens != 230 || e.Usage.CompletionTokens != 6 {
		t.Errorf("history usage = %+v, want 230 prompt tokens (cached included) and 6 completion", e.Usage)
	}
	if ru := e.ToolTrace[0].RoundUsage; ru.PromptTokens != 115 {
		t.Errorf("round usage = %+v, want 115 prompt tokens", ru)
	}
	for _, ev := range h.audit.events() {
		if ev.Type == "response" && (ev.TokensIn == nil || *ev.TokensIn != 230) {
			t.Errorf("audit response tokens_in = %v, want 230", ev.TokensIn)
		}
	}
}
