package openai

import (
	"encoding/json"
	"testing"
)

func TestWithStreamUsage(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"model":"m","stream":true}`, `{"stream_options":{"include_usage":true},"model":"m","stream":true}`},
		{`{"model":"m","stream_options":null}`, `{"model":"m","stream_options":{"include_usage":true}}`},
		{`{"model":"m","stream_options":{"include_usage":false,"x":1}}`, `{"model":"m","stream_options":{"include_usage":true,"x":1}}`},
		{` {}`, ` {"stream_options":{"include_usage":true}}`},
	} {
		got, ok := WithStreamUsage([]byte(c.in))
		if !ok || string(got) != c.want {
			t.Errorf("%s → %s %v, want %s", c.in, got, ok, c.want)
		}
		if !StreamUsageRequested(got) {
			t.Errorf("%s does not ask", got)
		}
	}
	if _, ok := WithStreamUsage([]byte(`{"stream_options":3}`)); ok {
		t.Error("a stream_options that is a number was rewritten")
	}
}

func TestStripStreamUsage(t *testing.T) {
	for _, c := range []struct {
		in, want string
		drop     bool
	}{
		{`{"id":"a","choices":[{"delta":{}}],"usage":null}`, `{"id":"a","choices":[{"delta":{}}]}`, false},
		{`{"usage":null, "id":"a"}`, `{ "id":"a"}`, false},
		{`{"id":"a","choices":[],"usage":{"prompt_tokens":1}}`, ``, true},
		{`{"id":"a","choices":[{"delta":{}}]}`, `{"id":"a","choices":[{"delta":{}}]}`, false},
		{`{"id":"a","choices":[],"usage":{"prompt_tokens":1},"x":[]}`, ``, true},
	} {
		got, drop := StripStreamUsage([]byte(c.in))
		if drop != c.drop || (!drop && string(got) != c.want) {
			t.Errorf("%s → %s %v", c.in, got, drop)
		}
	}
}

// FuzzStripStreamUsage: whatever the provider sends, the chunk relayed is
// valid JSON when the one received was, and has no top-level usage null.
func FuzzStripStreamUsage(f *testing.F) {
	for _, s := range []string{`{"usage":null}`, `{"a":1,"usage":null,"b":2}`, `{"choices":[],"usage":{}}`, `{"usage" : null }`, `{"\u0075sage":null}`, `[]`, `{"usage":nul`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, drop := StripStreamUsage(data)
		if drop || !json.Valid(data) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%q → %q: not JSON", data, out)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) == nil {
			if v, ok := m["usage"]; ok && string(v) == "null" {
				t.Fatalf("%q → %q keeps usage null", data, out)
			}
		}
	})
}
