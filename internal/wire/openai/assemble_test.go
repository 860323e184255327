package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

func TestAssemblerBoundsToolCallNames(t *testing.T) {
	a := New().NewAssembler()
	big := strings.Repeat("n", 1<<20)
	for i := 0; i < 12; i++ {
		ev := fmt.Sprintf(`{"id":"c","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}}]}`, i, big, big)
		a.Observe("", []byte(ev))
	}
	out, note := a.Result()
	if len(out) > wire.MaxAssembledBytes+64<<10 {
		t.Fatalf("assembled %d bytes, bound is %d", len(out), wire.MaxAssembledBytes)
	}
	if note == "" || !json.Valid(out) {
		t.Fatalf("note %q, valid %v", note, json.Valid(out))
	}
}

// The assembled response is the same bytes whichever encoder writes it:
// any stream of chunks (one per line of the input) is assembled, and the
// hand encoder's result, where it takes one, is encoding/json's.
func FuzzAssembleResult(f *testing.F) {
	for _, s := range []string{
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}` + "\n" +
			`{"id":"c1","choices":[{"index":0,"delta":{"content":"lo <b> & \"x\"\n"},"finish_reason":"stop"}]}` + "\n" +
			`{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
		`{"id":"c2","system_fingerprint":"fp","choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"id":"t","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}},{"index":0,"delta":{"refusal":"no","reasoning_content":"hm"}}]}` + "\n" +
			`{"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}},{"index":2,"function":{"name":"g"}}]},"finish_reason":"tool_calls"}]}`,
		`{"id":"c3","choices":[{"index":0,"delta":{"content":"\u2028\ud800é"}}],"usage":{"prompt_tokens": 1}}`,
		`{"id":"c4","choices":[],"usage":{"note":"<&>"}}`,
		`{"id":"c5","model":"\xff","choices":[{"index":0,"delta":{}}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream string) {
		a := New().NewAssembler().(*assembler)
		for _, line := range strings.Split(stream, "\n") {
			if line != "" {
				a.Observe("", []byte(line))
			}
		}
		want, wantNote := a.marshalResult()
		got, ok := a.appendResult()
		if !ok {
			return
		}
		if string(got) != string(want) {
			t.Fatalf("%q:\nhand          %s\nencoding/json %s", stream, got, want)
		}
		if _, note := a.Result(); note != wantNote {
			t.Fatalf("note %q, want %q", note, wantNote)
		}
	})
}

func BenchmarkAssembleResult(b *testing.B) {
	a := New().NewAssembler().(*assembler)
	a.Observe("", []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`))
	for range 300 {
		a.Observe("", []byte(`{"id":"c1","choices":[{"index":0,"delta":{"content":"lorem ipsum "}}]}`))
	}
	a.Observe("", []byte(`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":300}}`))
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			a.appendResult()
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			a.marshalResult()
		}
	})
}
