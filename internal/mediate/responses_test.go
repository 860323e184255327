package mediate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/continuity"
)

// Rules of the Responses API the shared scenario table cannot express:
// reasoning items, provider-run and custom tools, previous_response_id and
// conversations.

// rawResponse is an upstream Responses body with the given output items.
func rawResponse(id string, items ...string) string {
	return `{"id":"` + id + `","object":"response","status":"completed","model":"up-model","output":[` + strings.Join(items, ",") +
		`],"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}`
}

const (
	reasoningItem = `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"ENC-1"}`
	echoCallItem  = `{"type":"function_call","id":"fc_1","call_id":"c1","name":"svc__echo","arguments":"{\"q\":\"a\"}","status":"completed"}`
	answerItem    = `{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}`
)

func responsesHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, responsesKit{}, harnessOptions{})
}

func postRaw(t *testing.T, h *harness, body string) (int, string) {
	t.Helper()
	res := h.post(context.Background(), []byte(body))
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A hidden round's reasoning item goes back, whole, in the next round; a
// runner that does not store responses gets reasoning.encrypted_content
// asked for, so the item can go back at all.
func TestResponsesReasoningCarriedAcrossHiddenRounds(t *testing.T) {
	h := responsesHarness(t)
	h.up.script = []step{{Raw: rawResponse("resp_1", reasoningItem, echoCallItem)}, {Raw: rawResponse("resp_2", answerItem)}}
	status, body := postRaw(t, h, `{"model":"up-model","store":false,"reasoning":{"effort":"low"},"input":"hi"}`)
	if status != http.StatusOK || !strings.Contains(body, `"text":"done"`) || strings.Contains(body, "ENC-1") || strings.Contains(body, "function_call") {
		t.Fatalf("%d %s", status, body)
	}
	reqs := h.up.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream calls", len(reqs))
	}
	for i, r := range reqs {
		var top struct {
			Include []string `json:"include"`
		}
		_ = json.Unmarshal(r.Raw, &top)
		if len(top.Include) != 1 || top.Include[0] != "reasoning.encrypted_content" {
			t.Errorf("call %d: include %v, want reasoning.encrypted_content", i+1, top.Include)
		}
	}
	var second struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(reqs[1].Raw, &second); err != nil {
		t.Fatal(err)
	}
	if len(second.Input) != 4 || !strings.Contains(string(second.Input[1]), `"encrypted_content":"ENC-1"`) ||
		!strings.Contains(string(second.Input[2]), `"function_call"`) || strings.Contains(string(second.Input[2]), `"id"`) ||
		!strings.Contains(string(second.Input[3]), `"function_call_output"`) {
		t.Fatalf("second round input, want user, reasoning, call (no id), output:\n%s", reqs[1].Raw)
	}
}

// Full-input continuity when the final answer came with a reasoning item:
// the runner sends it back before the message, and the hidden round is
// restored before it, never between it and the message it produced; a
// runner that drops reasoning items gets the hidden round all the same.
func TestResponsesContinuityAroundReasoning(t *testing.T) {
	for _, keep := range []bool{true, false} {
		h := responsesHarness(t)
		finalReasoning := `{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"ENC-2"}`
		h.up.script = []step{{Raw: rawResponse("resp_1", echoCallItem)}, {Raw: rawResponse("resp_2", finalReasoning, answerItem)}, {Text: "again"}}
		if status, body := postRaw(t, h, `{"model":"up-model","store":false,"input":"hi"}`); status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		back := `{"role":"user","content":"hi"},`
		if keep {
			back += finalReasoning + `,`
		}
		back += `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]},{"role":"user","content":"more"}`
		if status, body := postRaw(t, h, `{"model":"up-model","store":false,"input":[`+back+`]}`); status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		var third struct {
			Input []struct {
				Type string `json:"type"`
				Role string `json:"role"`
			} `json:"input"`
		}
		reqs := h.up.requests()
		if err := json.Unmarshal(reqs[2].Raw, &third); err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, it := range third.Input {
			kinds = append(kinds, it.Type+"/"+it.Role)
		}
		want := "/user function_call/ function_call_output/ message/assistant /user"
		if keep {
			want = "/user function_call/ function_call_output/ reasoning/ message/assistant /user"
		}
		if got := strings.Join(kinds, " "); got != want {
			t.Errorf("reasoning kept=%v: next turn's input %s, want %s", keep, got, want)
		}
	}
}

// previous_response_id: hidden rounds keep it and append their items, so
// the provider's chain for the final response holds them; no continuity
// entry is kept, and the runner is answered with the final response's id.
func TestResponsesPreviousResponseIDChain(t *testing.T) {
	h := responsesHarness(t)
	h.up.script = []step{{Raw: rawResponse("resp_1", echoCallItem)}, {Raw: rawResponse("resp_2", answerItem)}}
	status, body := postRaw(t, h, `{"model":"up-model","previous_response_id":"resp_0","input":[{"role":"user","content":"hi"}]}`)
	if status != http.StatusOK || !strings.Contains(body, `"id":"resp_2"`) {
		t.Fatalf("%d %s", status, body)
	}
	reqs := h.up.requests()
	var second struct {
		Prev  string            `json:"previous_response_id"`
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(reqs[1].Raw, &second); err != nil {
		t.Fatal(err)
	}
	if second.Prev != "resp_0" || len(second.Input) != 3 {
		t.Fatalf("second round: %s", reqs[1].Raw)
	}
	if n := h.med.opt.Continuity.(continuity.Sizer).Len(); n != 0 {
		t.Errorf("%d continuity entries kept for a conversation the provider holds", n)
	}
}

// The runner's provider-run tools, custom tools and tool settings reach
// the provider untouched beside the managed function tools, and a
// custom_tool_call is the runner's to run.
func TestResponsesRunnerToolsAndCustomCalls(t *testing.T) {
	h := responsesHarness(t)
	custom := `{"type":"custom_tool_call","id":"ctc_1","call_id":"k1","name":"apply_patch","input":"*** patch"}`
	h.up.script = []step{{Raw: rawResponse("resp_1", custom)}}
	own := `[{"type":"web_search"},{"type":"mcp","server_label":"docs","server_url":"https://example.invalid/mcp","require_approval":"never"},{"type":"custom","name":"apply_patch","description":"patch files"}]`
	status, body := postRaw(t, h, `{"model":"up-model","tools":`+own+`,"tool_choice":"auto","parallel_tool_calls":false,"input":"hi"}`)
	if status != http.StatusOK || !strings.Contains(body, `"custom_tool_call"`) || !strings.Contains(body, `"*** patch"`) {
		t.Fatalf("%d %s", status, body)
	}
	up := h.up.requests()[0]
	var top struct {
		Tools    []json.RawMessage `json:"tools"`
		Choice   json.RawMessage   `json:"tool_choice"`
		Parallel json.RawMessage   `json:"parallel_tool_calls"`
	}
	if err := json.Unmarshal(up.Raw, &top); err != nil {
		t.Fatal(err)
	}
	var ownTools []json.RawMessage
	_ = json.Unmarshal([]byte(own), &ownTools)
	if len(top.Tools) <= len(ownTools) || string(top.Choice) != `"auto"` || string(top.Parallel) != "false" {
		t.Fatalf("upstream tools/settings: %s", up.Raw)
	}
	for i, tool := range ownTools {
		if string(top.Tools[i]) != string(tool) {
			t.Errorf("runner tool %d changed: %s, want %s", i, top.Tools[i], tool)
		}
	}
	if !strings.Contains(string(top.Tools[len(ownTools)]), `"type":"function"`) || !strings.Contains(string(top.Tools[len(ownTools)]), `"strict":false`) {
		t.Errorf("managed tool definition: %s", top.Tools[len(ownTools)])
	}
}

// A provider-side conversation would keep every hidden round's input
// twice: refused, clearly, for an agent with managed tools.
func TestResponsesConversationRefusedWithManagedTools(t *testing.T) {
	h := responsesHarness(t)
	status, body := postRaw(t, h, `{"model":"up-model","conversation":"conv_1","input":"hi"}`)
	if status != http.StatusBadRequest || !strings.Contains(body, "conversation") || !strings.Contains(body, "previous_response_id") {
		t.Fatalf("%d %s", status, body)
	}
	if n := len(h.up.requests()); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
}
