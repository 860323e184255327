package modelsim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

func responsesClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sim"), option.WithMaxRetries(0))
}

func weatherTool() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{responses.ToolParamOfFunction("tools.get_weather", map[string]any{"type": "object"}, false)}
}

func userInput(text string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)}}
}

// The official SDK creates a response, calls the scripted tool, sends the
// result back and reads the answer; the server keeps both responses.
func TestResponsesWithTheSDK(t *testing.T) {
	srv, url := startSim(t, sdkScript)
	c := responsesClient(url)
	ctx := context.Background()
	first, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "sim", Tools: weatherTool(), Input: userInput("What is the weather?")})
	if err != nil {
		t.Fatal(err)
	}
	var call responses.ResponseOutputItemUnion
	for _, it := range first.Output {
		if it.Type == "function_call" {
			call = it
		}
	}
	if first.Status != "completed" || first.OutputText() != "Let me check." || call.Name != "tools.get_weather" || call.Arguments.OfString != `{"city":"Paris"}` || call.CallID == "" {
		t.Fatalf("first response: %+v", first)
	}
	if first.Usage.InputTokens == 0 || first.Usage.TotalTokens != first.Usage.InputTokens+first.Usage.OutputTokens {
		t.Errorf("usage %+v", first.Usage)
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"ok":true,"data":"sunny"}`)
	out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	second, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "sim", Tools: weatherTool(),
		PreviousResponseID: openai.String(first.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}}})
	if err != nil {
		t.Fatal(err)
	}
	if second.OutputText() != "It is sunny in Paris." || second.PreviousResponseID != first.ID {
		t.Fatalf("second response: %+v", second)
	}
	recs := srv.Requests()
	last := recs[len(recs)-1]
	// The continuation sees the first turn: the user message, the call and
	// its result.
	if last.Rule != "after-weather" || last.Messages != 4 || last.LastUserText != "What is the weather?" || last.PreviousResponseID != first.ID ||
		len(last.ToolResults) != 1 || last.ToolResults[0].Name != "tools.get_weather" {
		t.Fatalf("continuation record %+v", last.Conversation)
	}

	got, err := c.Responses.Get(ctx, second.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != second.ID || got.OutputText() != "It is sunny in Paris." {
		t.Fatalf("get: %v %+v", err, got)
	}
	items, err := c.Responses.InputItems.List(ctx, second.ID, responses.InputItemListParams{})
	// Newest first, as the API lists them by default.
	if err != nil || len(items.Data) != 4 || items.Data[0].Type != "function_call_output" || items.Data[3].Role != "user" {
		t.Fatalf("input items: %v %s", err, items.RawJSON())
	}
	if err := c.Responses.Delete(ctx, first.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = c.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("get after delete: %v", err)
	}
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "sim", PreviousResponseID: openai.String("resp_nope"), Input: userInput("hi")})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "previous_response_not_found" || apiErr.Param != "previous_response_id" {
		t.Fatalf("unknown previous_response_id: %v", err)
	}
}

// A streamed answer is one response lifecycle whose deltas add up to the
// completed response.
func TestResponsesStreamWithTheSDK(t *testing.T) {
	_, url := startSim(t, sdkScript)
	c := responsesClient(url)
	s := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "sim", Tools: weatherTool(), Input: userInput("What is the weather?")})
	defer s.Close()
	var (
		types     []string
		text, arg strings.Builder
		final     responses.Response
		acc       responses.ResponseAccumulator
	)
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.function_call_arguments.delta":
			arg.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
		var union responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &union); err != nil {
			t.Fatal(err)
		}
		if err := acc.AddEvent(union); err != nil {
			t.Fatalf("accumulator refused %s: %v", ev.Type, err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	count := func(typ string) (n int) {
		for _, x := range types {
			if x == typ {
				n++
			}
		}
		return n
	}
	if types[0] != "response.created" || types[1] != "response.in_progress" || types[len(types)-1] != "response.completed" ||
		count("response.created") != 1 || count("response.completed") != 1 ||
		count("response.output_text.delta") < 2 || count("response.function_call_arguments.delta") < 2 {
		t.Fatalf("event order %v", types)
	}
	if text.String() != "Let me check." || arg.String() != `{"city":"Paris"}` || final.OutputText() != "Let me check." {
		t.Fatalf("text %q args %q final %+v", text.String(), arg.String(), final)
	}
	snap := acc.Snapshot()
	if snap.TerminalEvent != "response.completed" || snap.ResponseID != final.ID || snap.OutputText() != "Let me check." {
		t.Fatalf("accumulated %+v", snap)
	}
}

// With store:false the server keeps nothing, so a reasoning item must come
// back with its encrypted content; with it, the item is accepted and
// counted.
func TestResponsesReasoningWithoutStore(t *testing.T) {
	srv, url := startSim(t, sdkScript)
	req := func(input string) (*http.Response, []byte) {
		return postJSON(t, url+"/v1/responses", `{"model":"sim","store":false,"reasoning":{"effort":"low"},"include":["reasoning.encrypted_content"],"input":`+input+`}`)
	}
	res, body := req(`"What is the weather?"`)
	var first struct {
		ID     string            `json:"id"`
		Output []json.RawMessage `json:"output"`
	}
	if res.StatusCode != 200 || json.Unmarshal(body, &first) != nil || len(first.Output) < 2 || !strings.Contains(string(first.Output[0]), `"encrypted_content":"sim-encrypted:`) {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if srv.kept.get(first.ID) != nil {
		t.Fatal("a store:false response was kept")
	}
	bare := strings.Replace(string(first.Output[0]), `"encrypted_content"`, `"other"`, 1)
	res, body = req(`[{"role":"user","content":"What is the weather?"},` + bare + `]`)
	if res.StatusCode != 404 || !strings.Contains(string(body), "Items are not persisted when `store` is set to false") {
		t.Fatalf("reasoning without encrypted content: %d %s", res.StatusCode, body)
	}
	res, body = req(`[{"role":"user","content":"What is the weather?"},` + string(first.Output[0]) + `]`)
	recs := srv.Requests()
	if res.StatusCode != 200 || recs[len(recs)-1].EncryptedReasoningItems != 1 || recs[len(recs)-1].ReasoningItems != 1 {
		t.Fatalf("reasoning with encrypted content: %d %s %+v", res.StatusCode, body, recs[len(recs)-1].Conversation)
	}
}
