package modelsim

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(sdkScript))
	f.Add([]byte(matchScript))
	f.Add([]byte(`{"rules":[{"reply":{"tool_calls":[{"name":"a","arguments":"{}"}]}}]}`))
	f.Add([]byte("rules: [{reply: {error: {status: 503, message: x}}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScript(data)
		if err != nil {
			return
		}
		// A script that loads must be able to answer without panicking.
		conv := &Conversation{Format: FormatOpenAI, Model: "m", LastUserText: "x", Tools: []string{"a__b"}}
		if r := sc.Match(conv); r != nil && r.Reply.Error == nil {
			srv := &Server{}
			a := srv.makeAnswer(conv, r)
			if a.Text == "" && len(a.Calls) == 0 {
				t.Fatalf("rule %q answered nothing", r.Name)
			}
		}
	})
}

func FuzzDecodeOpenAI(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}],"tools":[{"type":"function","function":{"name":"t"}}],"stream":true,"stream_options":{"include_usage":true}}`))
	f.Add([]byte(`{"messages":[{"role":"function","name":"f","content":"x"}],"functions":[{"name":"f"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := decodeOpenAI(body)
		if err != nil {
			return
		}
		checkConversation(t, c)
	})
}

func FuzzDecodeAnthropic(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"u1","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"u1","content":[{"type":"text","text":"r"}],"is_error":true}]}],"tools":[{"name":"t"}],"stream":true}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := decodeAnthropic(body)
		if err != nil {
			return
		}
		checkConversation(t, c)
	})
}

// checkConversation runs a decoded request through matching and answering,
// which must never panic whatever the request held.
func checkConversation(t *testing.T, c *Conversation) {
	if c.Messages == 0 {
		t.Fatal("decoded a request with no messages")
	}
	sc := mustParseF(matchScript)
	sc.Match(c)
	_ = c.describe()
	srv := &Server{}
	for i := range sc.Rules {
		a := srv.makeAnswer(c, &sc.Rules[i])
		for _, call := range a.Calls {
			if call.Name == "" || !strings.HasPrefix(string(call.Args), "{") {
				t.Fatalf("bad call %+v", call)
			}
		}
	}
}

func mustParseF(s string) *Script {
	sc, err := ParseScript([]byte(s))
	if err != nil {
		panic(err)
	}
	return sc
}

func FuzzDecodeResponses(f *testing.F) {
	f.Add([]byte(`{"model":"m","input":"hi"}`))
	f.Add([]byte(`{"model":"m","instructions":"be brief","input":[{"role":"developer","content":"feed"},{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"},{"type":"function_call","call_id":"c1","name":"t","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"r"}],"tools":[{"type":"function","name":"t","parameters":{}},{"type":"web_search"}],"stream":true,"store":false}`))
	f.Add([]byte(`{"model":"m","previous_response_id":"resp_x","input":[{"type":"custom_tool_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}]}`))
	f.Add([]byte(`{"model":"m","store":false,"input":[{"role":"user","content":"q"},{"type":"reasoning","id":"rs_sim000003","summary":[]},{"type":"item_reference","id":"msg_1"},null]}`))
	// As the official SDK writes them.
	for _, p := range []responses.ResponseNewParams{
		{Model: "gpt-5", Instructions: openai.String("be brief"), Tools: weatherTool("svc__t"), Input: userInput("weather?"),
			Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow}, Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}},
		{Model: "gpt-5", PreviousResponseID: openai.String(fuzzKeptID), Store: openai.Bool(false), Input: inputItems(callOutput("call_sim000002", "sunny"))},
	} {
		b, err := json.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	sc := mustParseF(matchScript)
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := NewServer(Options{Script: sc})
		if err != nil {
			t.Fatal(err)
		}
		// A kept response for previous_response_id to continue from.
		kept, err := s.decodeResponses([]byte(`{"model":"m","reasoning":{},"input":"buy 5 shares of ACME"}`))
		if err != nil {
			t.Fatal(err)
		}
		if id := s.responseObject(kept, s.makeAnswer(kept, &sc.Rules[0]), time.Unix(0, 0)).ID; id != fuzzKeptID {
			t.Fatalf("kept response is %s, want %s", id, fuzzKeptID)
		}
		c, err := s.decodeResponses(body)
		if err != nil {
			return
		}
		checkConversation(t, c)
		// Answering keeps the request's items; listing reads them back.
		if c.resp.store {
			obj := s.responseObject(c, s.makeAnswer(c, &sc.Rules[0]), time.Unix(0, 0))
			if _, err := inputItemsPage(s.kept.get(obj.ID), url.Values{"order": {"asc"}}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// fuzzKeptID is the id of the first response a fresh server makes.
const fuzzKeptID = "resp_sim000001"
