package modelsim

import (
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func newTestServer(t *testing.T) *Server {
	t.Helper()
	s, err := NewServer(Options{Script: &Script{}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDecodeResponses pins how a Responses request becomes the facts
// rules match on.
func TestDecodeResponses(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name string
		body string
		want Conversation
		// context is a text the request holds somewhere, for
		// context_contains.
		context string
	}{
		{
			name: "input as a string",
			body: `{"model":"gpt-5","input":"hello there","stream":true}`,
			want: Conversation{Format: FormatResponses, Model: "gpt-5", Stream: true, LastUserText: "hello there", Messages: 1},
		},
		{
			name: "instructions, system and developer messages are the system prompt",
			body: `{"model":"m","instructions":"Be brief.","input":[
				{"role":"system","content":"SYS"},
				{"type":"message","role":"developer","content":[{"type":"input_text","text":"FEED"}]},
				{"role":"user","content":[{"type":"input_text","text":"first"},{"type":"input_image","image_url":"data:x"}]},
				{"type":"message","role":"assistant","content":[{"type":"output_text","text":"an earlier answer","annotations":[]}]},
				{"role":"user","content":"second"}]}`,
			want:    Conversation{Format: FormatResponses, Model: "m", System: "Be brief.\n\nSYS\n\nFEED", LastUserText: "second", Messages: 5},
			context: "an earlier answer",
		},
		{
			name: "the trailing run of outputs are the tool results, named from their calls",
			body: `{"model":"m","input":[
				{"role":"user","content":"go"},
				{"type":"function_call","call_id":"c0","name":"svc__old","arguments":"{}"},
				{"type":"function_call_output","call_id":"c0","output":"stale"},
				{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e1"},
				{"type":"function_call","id":"fc_1","call_id":"c1","name":"svc__a","arguments":"{}","status":"completed"},
				{"type":"custom_tool_call","call_id":"c2","name":"patch","input":"diff"},
				{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"A done"}]},
				{"type":"custom_tool_call_output","call_id":"c2","output":"patched"}],
				"tools":[{"type":"function","name":"svc__a","parameters":{},"strict":false},{"type":"custom","name":"patch"},{"type":"web_search"}]}`,
			want: Conversation{Format: FormatResponses, Model: "m", LastUserText: "go", Messages: 8, Tools: []string{"svc__a", "patch"},
				ToolResults:    []ToolResult{{ID: "c1", Name: "svc__a", Content: "A done"}, {ID: "c2", Name: "patch", Content: "patched"}},
				ReasoningItems: 1, EncryptedReasoningItems: 1},
			context: "stale",
		},
		{
			name: "reasoning items are counted, those with encrypted content apart",
			body: `{"model":"m","store":false,"input":[
				{"role":"user","content":"q"},
				{"type":"reasoning","id":"rs_a","summary":[],"encrypted_content":"e1"},
				{"type":"item_reference","id":"msg_x"},
				{"type":"reasoning","id":"rs_b","summary":[{"type":"summary_text","text":"thought"}],"encrypted_content":"e2"}]}`,
			want: Conversation{Format: FormatResponses, Model: "m", LastUserText: "q", Messages: 4, Store: &no,
				ReasoningItems: 2, EncryptedReasoningItems: 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newTestServer(t).decodeResponses([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.context != "" && !slices.ContainsFunc(c.allText, func(s string) bool { return strings.Contains(s, tc.context) }) {
				t.Errorf("request text %q lacks %q", c.allText, tc.context)
			}
			got := *c
			got.resp, got.allText = nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("conversation\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeResponsesRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		// status is the HTTP status of a refusal in the API's own words;
		// 0 for a plain invalid request.
		status int
		want   string
	}{
		{"not JSON", `{`, 0, "invalid responses request"},
		{"no input", `{"model":"m"}`, 0, "input is empty"},
		{"input an object", `{"model":"m","input":{"role":"user"}}`, 0, "string or an array"},
		{"bad content", `{"model":"m","input":[{"role":"user","content":7}]}`, 0, "input[0]"},
		{"tools not a list", `{"model":"m","input":"x","tools":{}}`, 0, "tools"},
		{"unknown previous response", `{"model":"m","previous_response_id":"resp_gone","input":"x"}`, http.StatusBadRequest,
			"Previous response with id 'resp_gone' not found."},
		{"bare reasoning without store", `{"model":"m","store":false,"input":[{"role":"user","content":"q"},{"type":"reasoning","id":"rs_x","summary":[]}]}`,
			http.StatusNotFound, "Item with id 'rs_x' not found. Items are not persisted when `store` is set to false."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newTestServer(t).decodeResponses([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			var refused *apiError
			if got := errors.As(err, &refused); got != (tc.status != 0) || got && refused.status != tc.status {
				t.Fatalf("refusal %+v, want status %d", refused, tc.status)
			}
		})
	}
	// With store (the default) the server may have kept the item, so a
	// bare reasoning item is taken as a reference and accepted.
	c, err := newTestServer(t).decodeResponses([]byte(`{"model":"m","input":[{"role":"user","content":"q"},{"type":"reasoning","id":"rs_x","summary":[]}]}`))
	if err != nil || c.ReasoningItems != 1 || c.EncryptedReasoningItems != 0 {
		t.Fatalf("stored bare reasoning: %v %+v", err, c)
	}
}
