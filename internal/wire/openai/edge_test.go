package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		body string
		want wire.Usage
		ok   bool
	}{
		{"usage", `{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`, wire.Usage{Input: 12, Output: 3}, true},
		{"no usage", `{"choices":[]}`, wire.Usage{}, false},
		{"null usage", `{"usage":null}`, wire.Usage{}, false},
		{"usage in content only", `{"choices":[{"message":{"content":"\"usage\""}}]}`, wire.Usage{}, false},
		{"not json", `"usage" oops`, wire.Usage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, ok := New().Usage([]byte(tt.body))
			if u != tt.want || ok != tt.ok {
				t.Fatalf("got %+v %v, want %+v %v", u, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestObserveStream(t *testing.T) {
	var st wire.StreamState
	for _, d := range []string{
		`{"choices":[{"delta":{"content":"hi"}}],"usage":null}`,
		`{"choices":[{"delta":{},"finish_reason":"stop"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}`,
	} {
		st = New().ObserveStream(st, "", []byte(d))
	}
	if !st.HaveUsage || st.Usage != (wire.Usage{Input: 9, Output: 2}) || st.Usage.Prompt() != 9 {
		t.Fatalf("%+v", st)
	}
	if !st.Done() || st.Terminal {
		t.Fatalf("a finish reason is an end, not the terminal event: %+v", st)
	}
	if st = New().ObserveStream(st, "", []byte(`[DONE]`)); !st.Terminal {
		t.Fatalf("[DONE] not terminal: %+v", st)
	}
	st = New().ObserveStream(wire.StreamState{}, "", []byte(`{"error":{"message":"overloaded"}}`))
	if !st.Terminal || !strings.Contains(st.UpstreamError, "overloaded") {
		t.Fatalf("%+v", st)
	}
	if st = New().ObserveStream(wire.StreamState{}, "", []byte(`{"choices":[{"delta":{},"finish_reason":null}]}`)); st.Done() {
		t.Fatalf("null finish reason ends the stream: %+v", st)
	}
}

func FuzzUsage(f *testing.F) {
	f.Add([]byte(`{"usage":{"prompt_tokens":1,"completion_tokens":2}}`))
	f.Add([]byte(`{"usage":{"prompt_tokens":-1,"completion_tokens":1e3}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, ok := New().Usage(b)
		if !ok && u != (wire.Usage{}) {
			t.Fatalf("counts %+v without ok", u)
		}
		if len(b) == 0 {
			return
		}
		var st wire.StreamState
		st = New().ObserveStream(st, "", b)
		_ = New().ObserveStream(st, "", b)
	})
}

func BenchmarkUsage1KB(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-b","object":"chat.completion","created":1,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("lorem ipsum ", 80) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":250,"completion_tokens":200,"total_tokens":450}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := New().Usage(body); !ok {
			b.Fatal("no usage")
		}
	}
}

// readUsage reads a usage object as encoding/json reads it into
// usageFields, whichever path it takes.
func FuzzReadUsage(f *testing.F) {
	for _, s := range []string{
		`{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}`, `{"prompt_tokens":null}`,
		`{"prompt_tokens":1.0}`, `{"prompt_tokens":1e3}`, `{"Prompt_Tokens":4}`, `{"prompt_tokens":1,"prompt_tokens":2}`,
		`{"prompt_tokens":99999999999999999999}`, `{"prompt_tokens":-0,"x":{"y":[1,2]}}`, `{"\u0070rompt_tokens":5}`,
		`{"prompt_tokens":"1"}`, `{"prompt_tokens":1`, `{}`, `{"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":2}}`,
		`{"prompt_tokens_details":{"cached_tokens":1},"Prompt_Tokens_Details":{}}`, `{"prompt_tokens":3,"prompt_tokens_details":null}`,
		`{"prompt_tokens_details":{"cached_tokens":"1"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got wire.Usage
		ok := readUsage(raw, &got)
		var want wire.Usage
		wantOK := false
		var fields usageFields
		if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &fields) == nil {
			if fields.Prompt != nil {
				want.Input, wantOK = *fields.Prompt, true
			}
			if fields.Completion != nil {
				want.Output, wantOK = *fields.Completion, true
			}
			if fields.PromptDetails != nil {
				want.CachedInput = fields.PromptDetails.Cached
			}
		}
		if ok != wantOK || got != want {
			t.Fatalf("%q: readUsage %+v %v, encoding/json %+v %v", raw, got, ok, want, wantOK)
		}
	})
}
