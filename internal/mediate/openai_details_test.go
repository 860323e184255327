package mediate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// OpenAI usage details (cached prompt tokens, reasoning tokens) are part of
// the usage a mediated turn sums over its rounds; the runner's answer must
// not pair summed totals with the last round's details.
func TestOpenAIUsageDetailsSummedOverRounds(t *testing.T) {
	k := openaiKit{}
	h := newHarness(t, k, harnessOptions{})
	usage := `"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}`
	h.up.script = []step{
		{Raw: `{"id":"c-a","object":"chat.completion","created":1,"model":"up-model","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"` + echo + `","arguments":"{\"q\":\"a\"}"}}]}}],` + usage + `}`},
		{Raw: `{"id":"c-b","object":"chat.completion","created":1,"model":"up-model","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"done"}}],` + usage + `}`},
	}
	res := h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, false, nil))
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	var got struct {
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
			PD         struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			CD struct {
				Reasoning int `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	u := got.Usage
	if u.Prompt != 20 || u.Completion != 6 || u.PD.Cached != 8 || u.CD.Reasoning != 4 {
		t.Fatalf("final usage = %+v, want 20/6 with 8 cached and 4 reasoning", u)
	}
}
