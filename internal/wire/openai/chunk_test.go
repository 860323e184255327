package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeChunk holds the stream chunk decoder to encoding/json: the
// same verdict and, where both decode, the same chunk.
func FuzzDecodeChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"hé\n"},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
		`{"id":"c1","choices":[],"usage":null}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}}]}`,
		`{"ID":"x","Choices":[{"Index":1}]}`, `{"id":"a","id":"b"}`, `{"created":1.5}`, `{"choices":[null]}`,
		`{"choices":[{"index":"0"}]}`, `{"\u0069d":"x","choices":null}`, `{"choices":[{"delta":null,"index":-0}]}`,
		`{"ſystem_fingerprint":"x"}`, `{"choices":[{"delta":{"content":"\ud800x","reasoning_content":null,"refusal":"no"}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || data[0] != '{' {
			return
		}
		var got, want asmChunk
		ok := decodeChunk(data, &got)
		wantOK := json.Unmarshal(data, &want) == nil
		if ok != wantOK {
			t.Fatalf("%q: decodeChunk %v, encoding/json %v", data, ok, wantOK)
		}
		if ok && !reflect.DeepEqual(norm(got), norm(want)) {
			t.Fatalf("%q:\n got %+v\nwant %+v", data, got, want)
		}
	})
}

// norm makes raw usage comparable (encoding/json copies it; the fast
// path keeps a slice of the chunk).
func norm(c asmChunk) asmChunk {
	if c.Usage != nil {
		c.Usage = append(json.RawMessage{}, c.Usage...)
	}
	return c
}

func BenchmarkDecodeChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`)
	b.Run("decodeChunk", func(b *testing.B) {
		for b.Loop() {
			var c asmChunk
			decodeChunk(data, &c)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var c asmChunk
			_ = json.Unmarshal(data, &c)
		}
	})
}
