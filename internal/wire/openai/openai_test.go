package openai

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

func TestCanonicalIgnoresReserialisation(t *testing.T) {
	f := New()
	same := [][]string{
		{`{"role":"assistant","content":"hi there"}`, `{"content":[{"type":"text","text":"hi "},{"type":"text","text":"there\n"}],"role":"assistant","refusal":null}`},
		{`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"x","arguments":"{\"b\":1,\"a\":2}"}}]}`,
			`{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"arguments":"{ \"a\": 2, \"b\": 1 }","name":"x"}}]}`},
	}
	for _, pair := range same {
		a, err1 := f.Canonical(json.RawMessage(pair[0]))
		b, err2 := f.Canonical(json.RawMessage(pair[1]))
		if err1 != nil || err2 != nil || !bytes.Equal(a.Bytes, b.Bytes) || a.Role != wire.RoleAssistant {
			t.Errorf("%s\n%s\ndiffer: %s vs %s", pair[0], pair[1], a.Bytes, b.Bytes)
		}
	}
	x, _ := f.Canonical(json.RawMessage(`{"role":"assistant","content":"hi"}`))
	y, _ := f.Canonical(json.RawMessage(`{"role":"user","content":"hi"}`))
	if bytes.Equal(x.Bytes, y.Bytes) {
		t.Error("roles must differ")
	}
	if s, _ := f.Canonical(json.RawMessage(`{"role":"developer","content":"x"}`)); s.Role != wire.RoleSystem {
		t.Error("developer is a system message")
	}
}

func TestRequestKeepsUnknownFields(t *testing.T) {
	f := New()
	in := `{"model":"m","x_custom":{"b":[1,2.50,"z"],"a":null},"messages":[{"role":"user","content":"q","name":"u"}],"stream":true,"stream_options":{"include_usage":true}}`
	r, err := wire.ParseRequest(f, []byte(in))
	if err != nil || !r.Stream || !r.IncludeUsage {
		t.Fatalf("%v %+v", err, r)
	}
	f.PrepareUpstream(r)
	out, _ := r.Encode()
	for _, want := range []string{`"x_custom":{"b":[1,2.50,"z"],"a":null}`, `{"role":"user","content":"q","name":"u"}`, `"stream":false`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("%s lacks %s", out, want)
		}
	}
	if bytes.Contains(out, []byte("stream_options")) {
		t.Errorf("stream_options kept: %s", out)
	}
}

func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(`{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"a","type":"function","function":{"name":"x","arguments":"{\"q\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`))
	f.Add([]byte(`{"choices":[{"message":{"content":[{"type":"text","text":"a"}],"tool_calls":[{"function":{"name":"x","arguments":{"q":1}}}]}}]}`))
	f.Add([]byte(`{"choices":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResponse(t, New(), data)
	})
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"shell"}}],"tool_choice":{"type":"function","function":{"name":"svc.echo"}}}`))
	f.Add([]byte(`{"functions":[{"name":"f"}],"function_call":{"name":"f"},"messages":[]}`))
	f.Add([]byte(`{"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"svc.echo"}}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRequest(t, New(), data)
	})
}

// checkResponse: a decoded response can always be turned back into an
// assistant turn, a final body and a stream, all valid JSON.
func checkResponse(t *testing.T, f wire.ToolLoop, data []byte) {
	resp, err := f.ParseResponse(data)
	if err != nil {
		return
	}
	turn := single(t)(f.AssistantTurn(resp, nil))
	if !json.Valid(turn) {
		t.Fatalf("assistant turn: %s", turn)
	}
	if len(resp.Calls) > 0 {
		if turn = single(t)(f.AssistantTurn(resp, []int{len(resp.Calls) - 1})); !json.Valid(turn) {
			t.Fatalf("partial assistant turn: %s", turn)
		}
	}
	if _, err := f.Canonical(turn); err != nil {
		t.Fatalf("canonical of own turn: %v", err)
	}
	body, err := f.FinalBody(resp, wire.Usage{Input: 1, Output: 2})
	if err != nil || !json.Valid(body) {
		t.Fatalf("final body: %v", err)
	}
	events, err := f.StreamEvents(resp, wire.Usage{}, true)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	for _, e := range events {
		if string(e.Data) != "[DONE]" && !json.Valid(e.Data) {
			t.Fatalf("stream event not JSON: %s", e.Data)
		}
	}
}

// checkRequest: a parsed request re-encodes to JSON that parses to the
// same tools, and every rewrite keeps it valid.
func checkRequest(t *testing.T, f wire.ToolLoop, data []byte) {
	r, err := wire.ParseRequest(f, data)
	if err != nil {
		return
	}
	for _, m := range r.Messages {
		_, _ = f.Canonical(m)
	}
	_ = f.RewriteToolChoice(r, func(n string) (string, bool) { return "alias_" + n, n != "" })
	f.RelaxToolChoice(r)
	f.PrepareUpstream(r)
	out, err := r.Encode()
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	again, err := wire.ParseRequest(f, out)
	if err != nil {
		t.Fatalf("re-parse: %v\n%s", err, out)
	}
	if len(again.ToolNames) != len(r.ToolNames) || len(again.Messages) != len(r.Messages) || again.Stream {
		t.Fatalf("re-parse differs: %v vs %v", again.ToolNames, r.ToolNames)
	}
}

func TestToolChoice(t *testing.T) {
	f := New()
	r, _ := wire.ParseRequest(f, []byte(`{"messages":[],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"svc.echo"}},{"type":"function","function":{"name":"shell"}}]}}}`))
	if err := f.RewriteToolChoice(r, func(n string) (string, bool) { return "svc__echo", n == "svc.echo" }); err != nil {
		t.Fatal(err)
	}
	if got := string(r.Fields["tool_choice"]); !bytes.Contains([]byte(got), []byte(`"name":"svc__echo"`)) || !bytes.Contains([]byte(got), []byte(`"name":"shell"`)) {
		t.Errorf("allowed_tools rewrite: %s", got)
	}
	for in, want := range map[string]string{`"required"`: `"auto"`, `"none"`: `"none"`, `{"type":"function","function":{"name":"x"}}`: `"auto"`} {
		r.Fields["tool_choice"] = json.RawMessage(in)
		f.RelaxToolChoice(r)
		if got := string(r.Fields["tool_choice"]); got != want {
			t.Errorf("relax %s = %s, want %s", in, got, want)
		}
	}
}

func TestStreamUsageOnlyWhenAsked(t *testing.T) {
	f := New()
	resp, err := f.ParseResponse([]byte(`{"id":"c","created":5,"model":"m","choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	without, _ := f.StreamEvents(resp, wire.Usage{Input: 3, Output: 4}, false)
	with, _ := f.StreamEvents(resp, wire.Usage{Input: 3, Output: 4}, true)
	if len(with) != len(without)+1 || !bytes.Contains(with[len(with)-2].Data, []byte(`"total_tokens":7`)) || string(with[len(with)-1].Data) != "[DONE]" {
		t.Errorf("usage chunk: %s", with[len(with)-2].Data)
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

// After hidden rounds the runner gets the provider's last answer as the
// provider wrote it (member order, escapes, extension members), with only
// usage's counts summed over the turn, in place.
func TestFinalBodyKeepsTheProviderBytes(t *testing.T) {
	f := New()
	body := `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"a <b> & c"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6,"x_vendor":true},"system_fingerprint":"fp"}`
	resp, err := f.ParseResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.FinalBody(resp, wire.Usage{Input: 12, Output: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"a <b> & c"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"x_vendor":true},"system_fingerprint":"fp"}`
	if string(out) != want {
		t.Fatalf("final body:\n%s\nwant\n%s", out, want)
	}
}

// FuzzUsageInPlace holds the in-place usage edit to the encoded one: where
// it edits, the result is JSON with the same members and values.
func FuzzUsageInPlace(f *testing.F) {
	for _, s := range []string{
		`{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}`,
		`{"completion_tokens":1,"x":{"a":[1,2]},"prompt_tokens_details":{"cached_tokens":2,"audio_tokens":0}}`,
		`{"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":1}}`,
		`{"prompt_tokens_details":7}`, `{}`, `{"prompt_tokens":1,"prompt_tokens":2}`, `{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}`,
		`{"prompt_tokens\u005fdetails":{"cached\u005ftokens":3}, "total_tokens" : 0 }`, `null`, `[]`,
	} {
		f.Add([]byte(s), 3, 4, 1, 0)
	}
	f.Fuzz(func(t *testing.T, raw []byte, in, out, cached, reasoning int) {
		if !json.Valid(raw) {
			return
		}
		total := wire.Usage{Input: in, Output: out, CachedInput: cached, Reasoning: reasoning}
		got, ok := usageInPlace(raw, total)
		if !ok {
			return
		}
		want, err := usageEncoded(raw, true, total)
		if err != nil {
			t.Fatalf("%s: the encoded path fails (%v) where the edit did not", raw, err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: edited usage is not JSON: %s", raw, got)
		}
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s:\nedited  %s\nencoded %s", raw, got, want)
		}
	})
}

// FuzzDecodeCallAndUsage holds the tool call and usage decoders to
// encoding/json on valid JSON (what ParseResponse hands them): the same
// verdict and, where both decode, the same values.
func FuzzDecodeCallAndUsage(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","type":"function","function":{"name":"x","arguments":"{\"q\":1}"}}`,
		`{"function":{"name":"x","arguments":{"q":1}}}`, `{"function":null,"id":null}`, `{"id":5}`, `{"Function":{}}`,
		`{"id":"a","id":"b"}`, `{"function":{"arguments":null,"name":"\u0078"}}`, `{"function":[]}`, `[]`, `null`,
		`{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":3}}`,
		`{"prompt_tokens":1.5}`, `{"prompt_tokens_details":null}`, `{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}`,
		`{"completion_tokens_details":7}`, `{"prompt_tokens":99999999999999999999}`, `{"Prompt_tokens":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || len(bytes.TrimSpace(data)) != len(data) {
			return
		}
		var gotCall, wantCall wireCall
		errGot, errWant := decodeCall(data, &gotCall), json.Unmarshal(data, &wantCall)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("%s: decodeCall %v, encoding/json %v", data, errGot, errWant)
		}
		if errGot == nil && !reflect.DeepEqual(gotCall, wantCall) {
			t.Fatalf("%s:\n got %+v\nwant %+v", data, gotCall, wantCall)
		}
		var gotUsage, wantUsage responseUsage
		errGot, errWant = decodeUsage(data, &gotUsage), json.Unmarshal(data, &wantUsage)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("%s: decodeUsage %v, encoding/json %v", data, errGot, errWant)
		}
		if errGot == nil && !reflect.DeepEqual(gotUsage, wantUsage) {
			t.Fatalf("%s:\n got %+v\nwant %+v", data, gotUsage, wantUsage)
		}
	})
}
