package mediate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/modelsim"
	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// responsesScript answers the first turn with a managed call and, once its
// result is in, with text; the second turn answers with text.
const responsesScript = `
rules:
  - name: ask-echo
    match: {user_contains: weather, tool_result: false}
    reply:
      tool_calls: [{name: svc.echo, arguments: {q: sunny}}]
  - name: answer
    match: {tool_result_of: svc.echo}
    reply: {text: It is sunny.}
  - name: again
    match: {user_contains: again, tool_result: false}
    reply: {text: Still sunny.}
`

// TestResponsesRunnerThroughCllama runs an official-SDK Responses runner
// through the real edge and mediator against the scripted provider, in
// both continuity styles, streaming and not: the managed call runs in a
// hidden round, the runner sees one clean response, and its next turn
// reaches the model with the hidden round in the conversation.
func TestResponsesRunnerThroughCllama(t *testing.T) {
	for _, chain := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("previous_response_id=%v/stream=%v", chain, stream), func(t *testing.T) {
				responsesRunner(t, chain, stream)
			})
		}
	}
}

func responsesRunner(t *testing.T, chain, stream bool) {
	sc, err := modelsim.ParseScript([]byte(responsesScript))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := modelsim.NewServer(modelsim.Options{Script: sc})
	if err != nil {
		t.Fatal(err)
	}
	model := httptest.NewServer(sim)
	t.Cleanup(model.Close)
	svc := newServices(t)

	dir := t.TempDir()
	root := filepath.Join(dir, "context")
	write := func(path string, v any) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, mustJSON(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "alice", "metadata.json"), map[string]any{"token": "alice:s3cret"})
	write(filepath.Join(root, "alice", "tools.json"), toolsManifest(svc.srv.URL, manifest.Policy{}))
	write(filepath.Join(dir, "auth", "providers.json"), map[string]any{"providers": map[string]any{
		"openai": map[string]any{"base_url": model.URL + "/v1", "api_key": "sk-up", "auth": "bearer"}}})
	ex := toolexec.New(toolexec.Options{})
	t.Cleanup(func() { _ = ex.Close() })
	auditBuf := &syncBuffer{}
	logger := audit.New(auditBuf)
	rec := recorder.New(logger, nil)
	state := filepath.Join(dir, "state")
	med, err := New(Options{Runner: ex, Recorder: rec, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(proxy.Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth"), StateDir: state, DefaultProvider: "openai"},
		proxy.Options{Recorder: rec, Mediator: med, AgentCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	front := httptest.NewServer(srv)
	t.Cleanup(front.Close)

	c := openai.NewClient(option.WithBaseURL(front.URL+"/v1/"), option.WithAPIKey("alice:s3cret"), option.WithMaxRetries(0))
	ctx := context.Background()
	own := []responses.ToolUnionParam{responses.ToolParamOfFunction("save_note", map[string]any{"type": "object"}, false),
		{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}}
	ask := func(input responses.ResponseInputParam, prev string) *responses.Response {
		t.Helper()
		params := responses.ResponseNewParams{Model: "gpt-sim", Tools: own, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
		if chain {
			if prev != "" {
				params.PreviousResponseID = openai.String(prev)
			}
		} else {
			params.Store = openai.Bool(false)
		}
		if !stream {
			resp, err := c.Responses.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		s := c.Responses.NewStreaming(ctx, params)
		defer s.Close()
		var (
			acc     responses.ResponseAccumulator
			created int
			final   *responses.Response
		)
		for s.Next() {
			ev := s.Current()
			var union responses.ResponsesServerEventUnion
			if err := json.Unmarshal([]byte(ev.RawJSON()), &union); err != nil {
				t.Fatal(err)
			}
			if err := acc.AddEvent(union); err != nil {
				t.Fatalf("the SDK's accumulator refused %s: %v", ev.Type, err)
			}
			switch ev.Type {
			case "response.created":
				created++
			case "response.completed":
				r := ev.Response
				final = &r
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if created != 1 || final == nil || acc.Snapshot().TerminalEvent != "response.completed" || acc.Snapshot().ResponseID != final.ID {
			t.Fatalf("want one response lifecycle: %d created, final %v, accumulated %+v", created, final != nil, acc.Snapshot())
		}
		return final
	}
	user := func(text string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
	}

	first := ask(responses.ResponseInputParam{user("How is the weather?")}, "")
	for _, it := range first.Output {
		if it.Type != "message" {
			t.Fatalf("the runner saw a %s item of a hidden round: %+v", it.Type, first.Output)
		}
	}
	if first.OutputText() != "It is sunny." || svc.count("echo") != 1 {
		t.Fatalf("first turn: %q, service called %d times", first.OutputText(), svc.count("echo"))
	}
	if first.Usage.InputTokens == 0 || first.Usage.OutputTokens == 0 {
		t.Errorf("usage not summed: %+v", first.Usage)
	}

	var second *responses.Response
	if chain {
		second = ask(responses.ResponseInputParam{user("And again?")}, first.ID)
	} else {
		second = ask(responses.ResponseInputParam{user("How is the weather?"),
			responses.ResponseInputItemParamOfMessage(first.OutputText(), responses.EasyInputMessageRoleAssistant), user("And again?")}, "")
	}
	if second.OutputText() != "Still sunny." {
		t.Fatalf("second turn: %q", second.OutputText())
	}
	recs := sim.Requests()
	last := recs[len(recs)-1]
	// user, the hidden call and its result, the answer, the new user text.
	if last.Messages != 5 {
		t.Fatalf("the model's second turn has %d items, want 5 (hidden round kept): %s", last.Messages, last.Body)
	}
	if !chain && !strings.Contains(string(last.Body), `"function_call_output"`) {
		t.Fatalf("the hidden round was not restored into the runner's full input: %s", last.Body)
	}
	if chain && (last.PreviousResponseID != first.ID || strings.Contains(string(last.Body), `"function_call_output"`)) {
		t.Fatalf("the continuation should ride on the provider's chain from %s: %+v", first.ID, last.Conversation)
	}
	if got, err := c.Responses.Get(ctx, first.ID, responses.ResponseGetParams{}); chain && (err != nil || got.ID != first.ID) {
		t.Fatalf("alice cannot read the response she was answered with: %v", err)
	}
	var sawCall bool
	for _, e := range auditBuf.events() {
		if e.Type == audit.TypeToolCall && e.Tool == "svc.echo" && e.Status == "ok" && e.Format == "responses" {
			sawCall = true
		}
	}
	if !sawCall {
		t.Error("no audit tool_call event for the hidden round")
	}
}
