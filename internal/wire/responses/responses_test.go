package responses

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

// A message is the same message however a runner spells it: string or
// parts, typed or not, with or without the id and status it came with.
func TestCanonicalSpellings(t *testing.T) {
	f := New()
	same := [][2]string{
		{`{"role":"user","content":"hi"}`, `{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`},
		{`{"role":"assistant","content":"done"}`, `{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}`},
		{`{"type":"function_call","call_id":"c1","name":"t","arguments":"{\"b\":1,\"a\":2}"}`, `{"type":"function_call","id":"fc_1","status":"completed","call_id":"c1","name":"t","arguments":"{\"a\":2, \"b\":1}"}`},
	}
	for _, pair := range same {
		a, err := f.Canonical(json.RawMessage(pair[0]))
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.Canonical(json.RawMessage(pair[1]))
		if err != nil {
			t.Fatal(err)
		}
		if a.Role != b.Role || !bytes.Equal(a.Bytes, b.Bytes) {
			t.Errorf("%s\n%s\ndiffer: %s vs %s", pair[0], pair[1], a.Bytes, b.Bytes)
		}
	}
	roles := map[string]wire.Role{
		`{"role":"developer","content":"feed"}`:                            wire.RoleSystem,
		`{"type":"message","role":"system","content":"s"}`:                 wire.RoleSystem,
		`{"type":"reasoning","id":"rs","summary":[]}`:                      wire.RolePrelude,
		`{"type":"web_search_call","id":"ws","status":"completed"}`:        wire.RolePrelude,
		`{"type":"function_call_output","call_id":"c","output":"r"}`:       wire.RoleTool,
		`{"type":"custom_tool_call","call_id":"c","name":"p","input":"x"}`: wire.RoleAssistant,
		`{"type":"local_shell_call_output","call_id":"c","output":"x"}`:    wire.RoleTool,
	}
	for item, want := range roles {
		c, err := f.Canonical(json.RawMessage(item))
		if err != nil || c.Role != want {
			t.Errorf("%s: role %v, %v; want %v", item, c.Role, err, want)
		}
	}
}

// Feeds go after the runner's leading system/developer items, which stay
// byte-identical; a string input becomes the feed and one user message.
func TestInjectFeeds(t *testing.T) {
	f := New()
	cases := map[string]string{
		`{"input":[{"role":"developer","content":"own"},{"role":"user","content":"q"}],"instructions":"i"}`: `{"input":[{"role":"developer","content":"own"},{"role":"developer","content":"FEED <x>"},{"role":"user","content":"q"}],"instructions":"i"}`,
		`{"input":[{"role":"user","content":"q"}]}`:                                                         `{"input":[{"role":"developer","content":"FEED <x>"},{"role":"user","content":"q"}]}`,
		`{"input":"q"}`: `{"input":[{"role":"developer","content":"FEED <x>"},{"role":"user","content":"q"}]}`,
		`{"input":[]}`:  `{"input":[{"role":"developer","content":"FEED <x>"}]}`,
	}
	for in, want := range cases {
		out, ok := f.InjectFeeds([]byte(in), "FEED <x>")
		if !ok || string(out) != want {
			t.Errorf("%s:\n got %s\nwant %s", in, out, want)
		}
	}
	if _, ok := f.InjectFeeds([]byte(`{"model":"m"}`), "x"); ok {
		t.Error("a body without input was rewritten")
	}
}

// The relay learns the created id, the end and the usage of a stream.
func TestObserveStream(t *testing.T) {
	f := New()
	var st wire.StreamState
	st = f.ObserveStream(st, "response.created", []byte(`{"type":"response.created","sequence_number":0,"response":{"id":"resp_9","status":"in_progress","usage":null}}`))
	if st.CreatedID != "resp_9" || st.Done() || st.HaveUsage {
		t.Fatalf("after created: %+v", st)
	}
	st = f.ObserveStream(st, "", []byte(`{"type":"response.output_text.delta","delta":"x"}`))
	st = f.ObserveStream(st, "", []byte(`{"type":"response.completed","response":{"id":"resp_9","usage":{"input_tokens":7,"input_tokens_details":{"cached_tokens":2},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1}}}}`))
	if !st.Terminal || st.UpstreamError != "" || st.Usage != (wire.Usage{Input: 7, Output: 3, CachedInput: 2, Reasoning: 1}) {
		t.Fatalf("after completed (found by its data's type): %+v", st)
	}
	failed := f.ObserveStream(wire.StreamState{}, "response.failed", []byte(`{"type":"response.failed","response":{"error":{"code":"server_error"}}}`))
	if !failed.Terminal || !strings.Contains(failed.UpstreamError, "server_error") {
		t.Fatalf("failed: %+v", failed)
	}
	errEv := f.ObserveStream(wire.StreamState{}, "error", []byte(`{"type":"error","code":"x","message":"m"}`))
	if !errEv.Terminal || errEv.UpstreamError == "" {
		t.Fatalf("error event: %+v", errEv)
	}
}

// History keeps the terminal event's response; a stream cut before it
// keeps the items that finished.
func TestAssembler(t *testing.T) {
	a := New().NewAssembler()
	a.Observe("response.created", []byte(`{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}`))
	a.Observe("response.output_item.done", []byte(`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","content":[]}}`))
	got, note := a.Result()
	if note == "" || !strings.Contains(string(got), `"id":"r"`) || !strings.Contains(string(got), `"type":"message"`) {
		t.Fatalf("cut stream: %s (%s)", got, note)
	}
	a.Observe("response.completed", []byte(`{"type":"response.completed","response":{"id":"r","status":"completed","output":[]}}`))
	if got, note = a.Result(); note != "" || string(got) != `{"id":"r","status":"completed","output":[]}` {
		t.Fatalf("completed: %s (%s)", got, note)
	}
}

func TestToolChoice(t *testing.T) {
	f := New()
	rename := func(n string) (string, bool) { return "svc__" + n, n == "echo" }
	for in, want := range map[string]string{
		`{"type":"function","name":"echo"}`: `{"name":"svc__echo","type":"function"}`,
		`{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"echo"},{"type":"web_search"}]}`: `{"mode":"required","tools":[{"name":"svc__echo","type":"function"},{"type":"web_search"}],"type":"allowed_tools"}`,
		`"required"`: `"required"`,
	} {
		r := &wire.Request{Fields: map[string]json.RawMessage{"tool_choice": json.RawMessage(in)}}
		if err := f.RewriteToolChoice(r, rename); err != nil || string(r.Fields["tool_choice"]) != want {
			t.Errorf("rewrite %s: %s %v, want %s", in, r.Fields["tool_choice"], err, want)
		}
	}
	for in, want := range map[string]string{
		`"required"`:                        `"auto"`,
		`"none"`:                            `"none"`,
		`{"type":"function","name":"echo"}`: `"auto"`,
		`{"type":"allowed_tools","mode":"required","tools":[]}`: `{"mode":"auto","tools":[],"type":"allowed_tools"}`,
	} {
		r := &wire.Request{Fields: map[string]json.RawMessage{"tool_choice": json.RawMessage(in)}}
		f.RelaxToolChoice(r)
		if string(r.Fields["tool_choice"]) != want {
			t.Errorf("relax %s: %s, want %s", in, r.Fields["tool_choice"], want)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","input":"hi","stream":true}`))
	f.Add([]byte(`{"model":"m","instructions":"i","previous_response_id":"resp_1","store":false,"reasoning":{},"include":["x"],"input":[{"role":"developer","content":"d"},{"type":"reasoning","id":"rs","summary":[]},{"type":"function_call","call_id":"c","name":"t","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"}],"tools":[{"type":"function","name":"t","parameters":{}},{"type":"custom","name":"p"},{"type":"web_search"}],"tool_choice":{"type":"function","name":"t"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fm := New()
		r, err := wire.ParseRequest(fm, body)
		if err != nil {
			return
		}
		fm.PrepareUpstream(r)
		fm.RelaxToolChoice(r)
		_ = fm.RewriteToolChoice(r, func(n string) (string, bool) { return n + "_", true })
		out, err := r.Encode()
		if err != nil || !json.Valid(out) {
			t.Fatalf("encode: %v %s", err, out)
		}
		for _, m := range r.Messages {
			_, _ = fm.Canonical(m)
		}
		if fed, ok := fm.InjectFeeds(body, "feed"); ok && !json.Valid(fed) {
			t.Fatalf("feeds made invalid JSON: %s", fed)
		}
	})
}

func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(`{"id":"r","status":"completed","model":"m","output":[{"type":"reasoning","id":"rs","summary":[]},{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"hi"},{"type":"refusal","refusal":"no"}]},{"type":"function_call","call_id":"c","name":"t","arguments":"{}"},{"type":"custom_tool_call","call_id":"k","name":"p","input":"x"}],"usage":{"input_tokens":1,"output_tokens":2}}`))
	f.Add([]byte(`{"output":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fm := New()
		resp, err := fm.ParseResponse(data)
		if err != nil {
			return
		}
		items, err := fm.AssistantTurn(resp, nil)
		if err != nil {
			return // an output item that is not an object
		}
		for _, it := range items {
			if !json.Valid(it) {
				t.Fatalf("assistant item %s", it)
			}
		}
		if len(resp.Calls) > 0 {
			if _, err := fm.AssistantTurn(resp, []int{0}); err != nil {
				t.Fatalf("partial turn: %v", err)
			}
		}
		if body, err := fm.FinalBody(resp, wire.Usage{Input: 1}); err != nil || !json.Valid(body) {
			t.Fatalf("final body: %v %s", err, body)
		}
		events, err := fm.StreamEvents(resp, wire.Usage{}, true)
		if err != nil {
			return
		}
		for _, e := range events {
			if !json.Valid(e.Data) {
				t.Fatalf("event %s: %s", e.Name, e.Data)
			}
		}
		if events[0].Name != "response.created" || !strings.HasPrefix(events[len(events)-1].Name, "response.") {
			t.Fatalf("lifecycle %s … %s", events[0].Name, events[len(events)-1].Name)
		}
	})
}

func FuzzObserveStream(f *testing.F) {
	f.Add("response.completed", []byte(`{"type":"response.completed","response":{"usage":{"input_tokens":1}}}`))
	f.Add("", []byte(`{"type":"response.created","response":{"id":"x"}}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		fm := New()
		_ = fm.ObserveStream(wire.StreamState{}, name, data)
		a := fm.NewAssembler()
		a.Observe(name, data)
		if out, _ := a.Result(); !json.Valid(out) {
			t.Fatalf("assembled %s", out)
		}
	})
}

// A response the provider did not store is nobody's to read back.
func TestCreatedID(t *testing.T) {
	f := New()
	if id := f.CreatedID([]byte(`{"id":"resp_1","store":true}`)); id != "resp_1" {
		t.Errorf("stored: %q", id)
	}
	if id := f.CreatedID([]byte(`{"id":"resp_1","store":false}`)); id != "" {
		t.Errorf("not stored: %q", id)
	}
	st := f.ObserveStream(wire.StreamState{}, "response.created", []byte(`{"type":"response.created","response":{"id":"resp_2","store":false}}`))
	if st.CreatedID != "" {
		t.Errorf("stream of an unstored response: %q", st.CreatedID)
	}
}
