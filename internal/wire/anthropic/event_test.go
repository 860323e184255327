package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// refEvent is what Observe makes of an event through encoding/json.
func refEvent(data []byte) (blockDelta, fastResult) {
	var e asmEvent
	if json.Unmarshal(data, &e) != nil {
		return blockDelta{}, isOther
	}
	switch e.Type {
	case "content_block_delta":
		return eventDelta(&e), isDelta
	case "message_start", "content_block_start", "message_delta":
		return blockDelta{}, fallBack
	}
	return blockDelta{}, isOther
}

// FuzzFastEvent holds the stream event scanner to encoding/json: where it
// does not leave an event to encoding/json, the event is valid JSON and it
// comes to the same verdict and the same delta.
func FuzzFastEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hé\n"}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm","text":"x"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"c2ln"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"text":"a","type":"text_delta","text":"b"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":5}}`,
		`{"type":"content_block_delta","index":0,"delta":{"Type":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"typ\u0065":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":1.5,"delta":{}}`, `{"type":"content_block_delta","index":-0,"delta":null}`,
		`{"type":"content_block_delta","Index":3,"delta":{}}`, `{"type":"content_block_delta","delta":[]}`,
		`{"type":"content_block_delta","usage":7,"delta":{"type":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":99999999999999999999}`,
		`{"type": "ping"}`, `{"type":"content_block_stop","index":0}`, `{"type":"message_stop"}`,
		`{"type":"ping","TYPE":"content_block_delta"}`, `{"type":"ping","type":"content_block_delta"}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":null,"index":null}`, `{"type":"\u0070ing"}`, `{"ſype":"x"}`, `{"type":"content_block_delta","index":"0"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || data[0] != '{' {
			return
		}
		if jsontop.Valid(data) != json.Valid(data) {
			t.Fatalf("%q: jsontop.Valid %v, encoding/json %v", data, !json.Valid(data), json.Valid(data))
		}
		got, res := fastEvent(data)
		if res == fallBack {
			return
		}
		// fastEvent checks the event as it reads it: it decides only
		// on valid JSON.
		if !json.Valid(data) {
			t.Fatalf("%q: fastEvent decided %d on an event that is not JSON", data, res)
		}
		want, wantRes := refEvent(data)
		if res != wantRes || got.Index != want.Index || got.Kind != want.Kind || deltaText(got) != want.Text {
			t.Fatalf("%q:\n got %+v (%d)\nwant %+v (%d)", data, got, res, want, wantRes)
		}
	})
}

// deltaText is the text the assembler appends for d.
func deltaText(d blockDelta) string {
	if d.Lit == nil {
		return d.Text
	}
	var sb strings.Builder
	var budget wire.AssemblyBudget
	budget.AddLiteral(&sb, d.Lit)
	return sb.String()
}

// The events a stream is made of take the fast path.
func TestFastEventTakesCommonEvents(t *testing.T) {
	for _, e := range benchStream() {
		_, res := fastEvent(e.Data)
		want := isOther
		switch e.Name {
		case "content_block_delta":
			want = isDelta
		case "message_start", "content_block_start", "message_delta":
			want = fallBack
		}
		if res != want {
			t.Errorf("%s: %d, want %d", e.Data, res, want)
		}
	}
}

// Events that are not valid JSON take no fast path, wherever the fault is.
func TestFastEventChecksWhatItReads(t *testing.T) {
	for _, s := range []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}} x`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a",}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","x":[1,]}}`,
		`{"type":"content_block_delta","index":0,"extra":tru,"delta":{"type":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"a"}}`,
		`{"type":"ping","x":"` + "\x01" + `"}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\q"}}`,
	} {
		if _, res := fastEvent([]byte(s)); res != fallBack {
			t.Errorf("%q: %d, want fallBack (not JSON)", s, res)
		}
	}
}
