package openai

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
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
		// As the assembler asks: the same verdict, and the same texts
		// once the literals are read.
		lazy := asmChunk{skipMeta: true, literals: true}
		if lazyOK := decodeChunk(data, &lazy); lazyOK != wantOK {
			t.Fatalf("%q: decodeChunk for the assembler %v, encoding/json %v", data, lazyOK, wantOK)
		}
		if ok && len(lazy.Choices) == len(want.Choices) {
			for i, ch := range lazy.Choices {
				w := want.Choices[i].Delta
				for _, p := range [][2]any{{ch.Delta.contentLit, w.Content}, {ch.Delta.refusalLit, w.Refusal}, {ch.Delta.reasoningLit, w.ReasoningContent}} {
					if lit := p[0].([]byte); lit != nil {
						var sb strings.Builder
						var budget wire.AssemblyBudget
						budget.AddLiteral(&sb, lit)
						if ws := p[1].(*string); ws == nil || sb.String() != *ws {
							t.Fatalf("%q: literal %s reads %q, encoding/json %v", data, lit, sb.String(), ws)
						}
					}
				}
			}
		} else if ok {
			t.Fatalf("%q: %d choices for the assembler, %d", data, len(lazy.Choices), len(want.Choices))
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
	// As the assembler decodes every chunk after the first: one chunk
	// reused, the texts kept as literals.
	b.Run("decodeChunk-assembler", func(b *testing.B) {
		var c asmChunk
		for b.Loop() {
			c = asmChunk{Choices: c.Choices[:0], skipMeta: true, literals: true}
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

// TestDecodeChunkNestingLimit: a member the decoder skips, nested to
// encoding/json's limit (10000 levels) and one level past it, gets
// encoding/json's verdict: the one-pass decoder counts the levels around
// the member.
func TestDecodeChunkNestingLimit(t *testing.T) {
	for _, tc := range []struct {
		around     int // objects and arrays around the member
		head, tail string
	}{
		{4, `{"choices":[{"index":0,"delta":{"content":"a","x":`, `}}]}`},
		{3, `{"choices":[{"index":0,"x":`, `,"delta":{"content":"a"}}]}`},
		{1, `{"x":`, `,"choices":[]}`},
	} {
		for _, past := range []int{0, 1} {
			n := 10000 - tc.around + past
			data := []byte(tc.head + strings.Repeat("[", n) + strings.Repeat("]", n) + tc.tail)
			want := json.Unmarshal(data, &asmChunk{}) == nil
			if want != (past == 0) {
				t.Fatalf("%s…: encoding/json says %v %d levels deep; the test's limit is wrong", tc.head, want, tc.around+n)
			}
			for _, c := range []asmChunk{{}, {skipMeta: true, literals: true}} {
				if got := decodeChunk(data, &c); got != want {
					t.Errorf("%s… %d levels deep: decodeChunk %v, encoding/json %v", tc.head, tc.around+n, got, want)
				}
			}
		}
	}
}
