package anthropic

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

func TestCanonicalIgnoresReserialisation(t *testing.T) {
	f := New()
	same := [][]string{
		{`{"role":"assistant","content":"hi there"}`,
			`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"hi ","citations":null},{"type":"text","text":"there","cache_control":{"type":"ephemeral"}}]}`},
		{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"}],"cache_control":{"type":"ephemeral"}}]}`},
		{`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{"b":1,"a":2}}]}`,
			`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{ "a":2 ,"b":1 }}]}`},
	}
	for _, pair := range same {
		a, err1 := f.Canonical(json.RawMessage(pair[0]))
		b, err2 := f.Canonical(json.RawMessage(pair[1]))
		if err1 != nil || err2 != nil || !bytes.Equal(a.Bytes, b.Bytes) {
			t.Errorf("%s\n%s\ndiffer: %s vs %s", pair[0], pair[1], a.Bytes, b.Bytes)
		}
	}
}

func TestAssistantTurnDropsHiddenCalls(t *testing.T) {
	f := New()
	resp, err := f.ParseResponse([]byte(`{"id":"m","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"1","name":"svc__x","input":{}},{"type":"tool_use","id":"2","name":"shell","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}`))
	if err != nil || len(resp.Calls) != 2 || resp.Usage != (wire.Usage{Input: 3, Output: 4}) {
		t.Fatalf("%v %+v", err, resp)
	}
	turn := single(t)(f.AssistantTurn(resp, []int{0}))
	if bytes.Contains(turn, []byte("shell")) || !bytes.Contains(turn, []byte(`"text":"a"`)) {
		t.Errorf("turn %s", turn)
	}
}

func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(`{"id":"m","type":"message","model":"x","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"a","name":"x","input":{"q":1}},{"type":"thinking","thinking":"t","signature":"s"}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`))
	f.Add([]byte(`{"content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}}]}`))
	f.Add([]byte(`{"content":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, err := New().ParseResponse(data)
		if err != nil {
			return
		}
		turn := single(t)(New().AssistantTurn(resp, nil))
		if !json.Valid(turn) {
			t.Fatalf("assistant turn: %v", err)
		}
		if len(resp.Calls) > 0 {
			if turn = single(t)(New().AssistantTurn(resp, []int{0})); !json.Valid(turn) {
				t.Fatalf("partial turn: %s", turn)
			}
		}
		if body, err := New().FinalBody(resp, wire.Usage{}); err != nil || !json.Valid(body) {
			t.Fatalf("final body: %v", err)
		}
		events, err := New().StreamEvents(resp, wire.Usage{}, true)
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		for _, e := range events {
			if !json.Valid(e.Data) {
				t.Fatalf("event %s not JSON: %s", e.Name, e.Data)
			}
		}
	})
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","system":"s","messages":[{"role":"user","content":"q"}],"tools":[{"name":"shell","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"svc.echo"}}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fm := New()
		r, err := wire.ParseRequest(fm, data)
		if err != nil {
			return
		}
		for _, m := range r.Messages {
			_, _ = fm.Canonical(m)
		}
		_ = fm.RewriteToolChoice(r, func(n string) (string, bool) { return "alias_" + n, n != "" })
		fm.RelaxToolChoice(r)
		fm.PrepareUpstream(r)
		out, err := r.Encode()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := wire.ParseRequest(fm, out)
		if err != nil || len(again.Messages) != len(r.Messages) || len(again.ToolNames) != len(r.ToolNames) || again.Stream {
			t.Fatalf("re-parse: %v", err)
		}
	})
}

func TestToolChoice(t *testing.T) {
	f := New()
	r, _ := wire.ParseRequest(f, []byte(`{"messages":[],"tool_choice":{"type":"tool","name":"svc.echo","disable_parallel_tool_use":true}}`))
	_ = f.RewriteToolChoice(r, func(n string) (string, bool) { return "svc__echo", n == "svc.echo" })
	if got := string(r.Fields["tool_choice"]); !bytes.Contains([]byte(got), []byte(`"name":"svc__echo"`)) {
		t.Errorf("rewrite: %s", got)
	}
	f.RelaxToolChoice(r)
	if got := string(r.Fields["tool_choice"]); got != `{"disable_parallel_tool_use":true,"type":"auto"}` {
		t.Errorf("relax: %s", got)
	}
	r.Fields["tool_choice"] = json.RawMessage(`{"type":"none"}`)
	f.RelaxToolChoice(r)
	if got := string(r.Fields["tool_choice"]); got != `{"type":"none"}` {
		t.Errorf("relax none: %s", got)
	}
}

// single checks that an assistant turn is one message and returns it.
func single(t testing.TB) func([]json.RawMessage, error) json.RawMessage {
	return func(msgs []json.RawMessage, err error) json.RawMessage {
		t.Helper()
		if err != nil || len(msgs) != 1 {
			t.Fatalf("assistant turn: %v, %d messages", err, len(msgs))
		}
		return msgs[0]
	}
}
