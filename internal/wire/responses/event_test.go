package responses

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// FuzzDecodeEvent holds the stream event decoder to encoding/json: the
// same verdict and, where both decode, the same event.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.completed","sequence_number":9,"response":{"id":"r","status":"completed","output":[],"usage":{"input_tokens":1}}}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","content":[{"type":"output_text","text":"hé\n"}]}}`,
		`{"type":"response.created","response":null}`, `{"type":null,"item":3}`, `{"type":5}`, `null`, ` {"item":[]} `,
		`{"Type":"x"}`, `{"type":"a","type":"b"}`, `{"\u0074ype":"x"}`, `{"ſype":"x"}`, `{"response":{},"RESPONSE":[]}`,
		`{"type":"\ud800"}`, `{"type":"a\"b","item":"s"}`, `[]`, `"x"`, `{"item":{"a":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		var got, want asmEvent
		ok := decodeEvent(data, &got)
		wantOK := json.Unmarshal(data, &want) == nil
		if ok != wantOK {
			t.Fatalf("%q: decodeEvent %v, encoding/json %v", data, ok, wantOK)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", data, got, want)
		}
	})
}

// The events the assembler reads take the fast path.
func TestDecodeEventTakesCommonEvents(t *testing.T) {
	n := 0
	for _, e := range benchStream() {
		switch e.Name {
		case evCreated, evCompleted, "response.output_item.done":
		default:
			continue
		}
		var ev asmEvent
		if !fastEvent(e.Data, &ev) || len(ev.Response)+len(ev.Item) == 0 {
			t.Fatalf("%s: not decoded by the scanner", e.Name)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d events", n)
	}
}

// FuzzEventType holds eventType to the type encoding/json decodes, for
// every type the format acts on.
func FuzzEventType(f *testing.F) {
	for _, s := range []string{`{"type":"response.completed"}`, `{"type":"response.output_text.delta","delta":"x"}`,
		`{"type":"response.complet\u0065d"}`, `{"type":"response.created\ud800"}`, `{"type":5}`, `{"x":1,"type":"response.output_item.done"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := eventType("", data)
		raw, _ := jsontop.Find(data, "type")
		var want string
		_ = json.Unmarshal(raw, &want)
		for _, typ := range actedOn {
			if (got == typ) != (want == typ) {
				t.Fatalf("%q: eventType %q, encoding/json %q", data, got, want)
			}
		}
	})
}
