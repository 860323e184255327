package modelsim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// responsesScript is sdkScript with a rule for Responses instructions.
const responsesScript = `
rules:
  - name: ask-weather
    match: {user_contains: weather, tool_result: false, tools_offered: [tools.get_weather]}
    reply:
      text: Let me check.
      tool_calls: [{name: tools.get_weather, arguments: {city: Paris}}]
  - name: after-weather
    match: {tool_result_of: tools.get_weather}
    reply: {text: It is sunny in Paris.}
  - name: brief
    match: {format: responses, system_contains: be brief}
    reply: {text: Brief.}
  - name: fallback
    default: true
    reply: {text: Nothing scripted for that.}
`

func responsesClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sim"), option.WithMaxRetries(0))
}

func weatherTool(name string) []responses.ToolUnionParam {
	return []responses.ToolUnionParam{responses.ToolParamOfFunction(name, map[string]any{"type": "object"}, false),
		responses.ToolParamOfWebSearch(responses.WebSearchToolTypeWebSearch)}
}

func inputItems(items ...responses.ResponseInputItemUnionParam) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfInputItemList: items}
}

func userInput(text string) responses.ResponseNewParamsInputUnion {
	return inputItems(responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser))
}

func callOutput(callID, output string) responses.ResponseInputItemUnionParam {
	out := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	out.OfFunctionCallOutput.CallID = openai.String(callID)
	return out
}

// carry turns a response's output into input items, as a runner without
// previous_response_id sends them back.
func carry(t *testing.T, output []responses.ResponseOutputItemUnion) []responses.ResponseInputItemUnionParam {
	t.Helper()
	var items []responses.ResponseInputItemUnionParam
	for _, it := range output {
		switch it.Type {
		case "message":
			p := it.AsMessage().ToParam()
			items = append(items, responses.ResponseInputItemUnionParam{OfOutputMessage: &p})
		case "function_call":
			p := it.AsFunctionCall().ToParam()
			items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCall: &p})
		case "reasoning":
			p := it.AsReasoning().ToParam()
			items = append(items, responses.ResponseInputItemUnionParam{OfReasoning: &p})
		default:
			t.Fatalf("unexpected output item %s", it.RawJSON())
		}
	}
	return items
}

// storeOf is a response's store member, which the SDK's type leaves out.
func storeOf(t *testing.T, r *responses.Response) bool {
	t.Helper()
	var v struct {
		Store *bool `json:"store"`
	}
	if err := json.Unmarshal([]byte(r.RawJSON()), &v); err != nil || v.Store == nil {
		t.Fatalf("response without store: %s", r.RawJSON())
	}
	return *v.Store
}

func outputTypes(r *responses.Response) []string {
	var types []string
	for _, it := range r.Output {
		types = append(types, it.Type)
	}
	return types
}

func lastRecord(t *testing.T, srv *Server) Record {
	t.Helper()
	recs := srv.Requests()
	if len(recs) == 0 {
		t.Fatal("no request recorded")
	}
	return recs[len(recs)-1]
}

func asAPIError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v is not an API error", err)
	}
	return apiErr
}

// One request, one answer, through the official SDK: text, a scripted
// call under the offered tool's name, a tool result sent back as items,
// and a reasoning item.
func TestResponsesNewWithTheSDK(t *testing.T) {
	srv, url := startSim(t, responsesScript)
	c := responsesClient(url)
	for _, tc := range []struct {
		name   string
		params responses.ResponseNewParams
		rule   string
		text   string
		types  []string
	}{
		{
			name:   "text",
			params: responses.ResponseNewParams{Instructions: openai.String("Be brief."), Input: userInput("hello")},
			rule:   "brief", text: "Brief.", types: []string{"message"},
		},
		{
			name:   "scripted call under the offered alias",
			params: responses.ResponseNewParams{Tools: weatherTool("tools__get_weather"), Input: userInput("What is the weather?")},
			rule:   "ask-weather", text: "Let me check.", types: []string{"message", "function_call"},
		},
		{
			name: "tool result round trip",
			params: responses.ResponseNewParams{Tools: weatherTool("tools__get_weather"), Input: inputItems(
				responses.ResponseInputItemParamOfMessage("What is the weather?", responses.EasyInputMessageRoleUser),
				responses.ResponseInputItemParamOfFunctionCall(`{"city":"Paris"}`, "call_1", "tools__get_weather"),
				callOutput("call_1", `{"ok":true,"data":"sunny"}`))},
			rule: "after-weather", text: "It is sunny in Paris.", types: []string{"message"},
		},
		{
			name: "reasoning with encrypted content",
			params: responses.ResponseNewParams{Instructions: openai.String("Be brief."), Input: userInput("hello"),
				Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
				Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}},
			rule: "brief", text: "Brief.", types: []string{"reasoning", "message"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.params.Model = "gpt-sim"
			r, err := c.Responses.New(context.Background(), tc.params)
			if err != nil {
				t.Fatal(err)
			}
			if got := lastRecord(t, srv); got.Rule != tc.rule || got.Format != FormatResponses {
				t.Fatalf("answered by %q as %q", got.Rule, got.Format)
			}
			if !strings.HasPrefix(r.ID, "resp_sim") || r.Status != responses.ResponseStatusCompleted || r.Model != "gpt-sim" ||
				r.OutputText() != tc.text || !reflect.DeepEqual(outputTypes(r), tc.types) {
				t.Fatalf("response %s", r.RawJSON())
			}
			if !storeOf(t, r) || !r.ParallelToolCalls || r.ToolChoice.OfToolChoiceMode != "auto" || r.CompletedAt == 0 {
				t.Errorf("defaults not echoed: %s", r.RawJSON())
			}
			if u := r.Usage; u.InputTokens == 0 || u.OutputTokens == 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
				t.Errorf("usage %s", u.RawJSON())
			}
			for _, it := range r.Output {
				switch it.Type {
				case "function_call":
					if it.Name != "tools__get_weather" || it.Arguments.OfString != `{"city":"Paris"}` || !strings.HasPrefix(it.CallID, "call_sim") || !strings.HasPrefix(it.ID, "fc_sim") {
						t.Errorf("call %s", it.RawJSON())
					}
				case "reasoning":
					if !strings.HasPrefix(it.ID, "rs_sim") || it.EncryptedContent == "" {
						t.Errorf("reasoning %s", it.RawJSON())
					}
				}
			}
		})
	}
}

// A stream is one response lifecycle: each item announced, its deltas,
// its completion, and a completed response the deltas add up to.
func TestResponsesStreamWithTheSDK(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params responses.ResponseNewParams
		text   string
		args   string
	}{
		{"text and a call", responses.ResponseNewParams{Tools: weatherTool("tools.get_weather"), Input: userInput("What is the weather?")}, "Let me check.", `{"city":"Paris"}`},
		{"text with reasoning", responses.ResponseNewParams{Input: userInput("anything"), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow}}, "Nothing scripted for that.", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := startSim(t, responsesScript)
			c := responsesClient(url)
			tc.params.Model = "gpt-sim"
			s := c.Responses.NewStreaming(context.Background(), tc.params)
			defer s.Close()
			var (
				types      []string
				text, args strings.Builder
				created    responses.Response
				final      responses.Response
				acc        responses.ResponseAccumulator
			)
			for s.Next() {
				ev := s.Current()
				if ev.SequenceNumber != int64(len(types)) {
					t.Fatalf("event %d (%s) has sequence_number %d", len(types), ev.Type, ev.SequenceNumber)
				}
				types = append(types, ev.Type)
				switch ev.Type {
				case "response.created":
					created = ev.Response
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.function_call_arguments.delta":
					args.WriteString(ev.Delta)
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
			if created.Status != "in_progress" || len(created.Output) != 0 || created.ID != final.ID {
				t.Fatalf("response.created carried %s", created.RawJSON())
			}
			if final.Status != "completed" || final.OutputText() != tc.text || text.String() != tc.text || args.String() != tc.args {
				t.Fatalf("text %q args %q final %s", text.String(), args.String(), final.RawJSON())
			}
			if n := strings.Count(strings.Join(types, " "), "response.output_text.delta"); n < 2 {
				t.Errorf("text came in %d deltas", n)
			}
			// The events, deltas folded, are exactly those the completed
			// output calls for.
			want := []string{"response.created", "response.in_progress"}
			for _, it := range final.Output {
				want = append(want, "response.output_item.added")
				switch it.Type {
				case "message":
					want = append(want, "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done")
				case "function_call":
					want = append(want, "response.function_call_arguments.delta", "response.function_call_arguments.done")
				}
				want = append(want, "response.output_item.done")
			}
			want = append(want, "response.completed")
			if got := slices.Compact(slices.Clone(types)); !reflect.DeepEqual(got, want) {
				t.Fatalf("events\n got %v\nwant %v", got, want)
			}
			snap := acc.Snapshot()
			if snap.TerminalEvent != "response.completed" || snap.ResponseID != final.ID || snap.OutputText() != tc.text {
				t.Fatalf("accumulated %+v", snap)
			}
			// What was streamed is what was kept.
			kept, err := c.Responses.Get(context.Background(), final.ID, responses.ResponseGetParams{})
			if err != nil || !jsonEqual(kept.Output, final.Output) {
				t.Fatalf("kept %v %s", err, kept.RawJSON())
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var va, vb any
	return json.Unmarshal(ja, &va) == nil && json.Unmarshal(jb, &vb) == nil && reflect.DeepEqual(va, vb)
}

// previous_response_id continues from a kept response: the model sees its
// input and output, then the new input, but not its instructions.
func TestResponsesPreviousResponseID(t *testing.T) {
	srv, url := startSim(t, responsesScript)
	c := responsesClient(url)
	ctx := context.Background()
	first, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-sim", Instructions: openai.String("Answer in French."),
		Tools: weatherTool("tools.get_weather"), Input: userInput("What is the weather?")})
	if err != nil {
		t.Fatal(err)
	}
	call := first.Output[1]
	second, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-sim", Tools: weatherTool("tools.get_weather"),
		PreviousResponseID: openai.String(first.ID), Input: inputItems(callOutput(call.CallID, `{"sky":"clear"}`))})
	if err != nil {
		t.Fatal(err)
	}
	rec := lastRecord(t, srv)
	if second.OutputText() != "It is sunny in Paris." || second.PreviousResponseID != first.ID || second.Instructions.OfString != "" {
		t.Fatalf("second response %s", second.RawJSON())
	}
	want := Conversation{Format: FormatResponses, Model: "gpt-sim", LastUserText: "What is the weather?", Messages: 4,
		Tools: []string{"tools.get_weather"}, PreviousResponseID: first.ID,
		ToolResults: []ToolResult{{ID: call.CallID, Name: "tools.get_weather", Content: `{"sky":"clear"}`}}}
	got := *rec.Conversation
	got.resp, got.allText = nil, nil
	if rec.Rule != "after-weather" || !reflect.DeepEqual(got, want) {
		t.Fatalf("continuation\n got %+v\nwant %+v", got, want)
	}

	// An item keeps its id through the chain.
	firstItems, err := c.Responses.InputItems.List(ctx, first.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	secondItems, err := c.Responses.InputItems.List(ctx, second.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range secondItems.Data {
		ids = append(ids, it.ID)
	}
	if len(ids) != 4 || ids[0] != firstItems.Data[0].ID || ids[1] != first.Output[0].ID || ids[2] != call.ID || secondItems.Data[3].Type != "function_call_output" {
		t.Fatalf("second input items %v, first response %s", ids, first.RawJSON())
	}

	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-sim", PreviousResponseID: openai.String("resp_nope"), Input: userInput("hi")})
	if e := asAPIError(t, err); e.StatusCode != http.StatusBadRequest || e.Code != "previous_response_not_found" || e.Param != "previous_response_id" ||
		e.Type != "invalid_request_error" || e.Message != "Previous response with id 'resp_nope' not found." {
		t.Fatalf("unknown previous_response_id: %+v", e)
	}
	res, body := postJSON(t, url+"/v1/responses", `{"model":"m","previous_response_id":"resp_nope","input":"hi"}`)
	wantBody := `{"error":{"message":"Previous response with id 'resp_nope' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`
	if res.StatusCode != http.StatusBadRequest || strings.TrimSpace(string(body)) != wantBody {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}

// The server keeps at most KeepRequests responses, dropping the oldest.
func TestResponsesKeptAreBounded(t *testing.T) {
	sc, err := ParseScript([]byte(responsesScript))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(Options{Script: sc, KeepRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c := responsesClient(hs.URL)
	ctx := context.Background()
	var ids []string
	for range 2 {
		r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: userInput("hi")})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", PreviousResponseID: openai.String(ids[0]), Input: userInput("again")})
	if e := asAPIError(t, err); e.StatusCode != http.StatusBadRequest || e.Code != "previous_response_not_found" {
		t.Fatalf("dropped response: %+v", e)
	}
	if _, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", PreviousResponseID: openai.String(ids[1]), Input: userInput("again")}); err != nil {
		t.Fatalf("newest response: %v", err)
	}
}

// With store:false nothing is kept, so a runner must send reasoning back
// with its encrypted content; a bare reasoning item is refused as the API
// refuses it, unless the server kept the response that made it.
func TestResponsesReasoningWithoutStore(t *testing.T) {
	srv, url := startSim(t, responsesScript)
	c := responsesClient(url)
	ctx := context.Background()
	params := func(input ...responses.ResponseInputItemUnionParam) responses.ResponseNewParams {
		return responses.ResponseNewParams{Model: "gpt-sim", Store: openai.Bool(false), Input: inputItems(input...),
			Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
			Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}}
	}
	ask := responses.ResponseInputItemParamOfMessage("think first", responses.EasyInputMessageRoleUser)
	first, err := c.Responses.New(ctx, params(ask))
	if err != nil {
		t.Fatal(err)
	}
	if storeOf(t, first) || first.Output[0].Type != "reasoning" || first.Output[0].EncryptedContent == "" {
		t.Fatalf("first response %s", first.RawJSON())
	}
	if _, err := c.Responses.Get(ctx, first.ID, responses.ResponseGetParams{}); asAPIError(t, err).StatusCode != http.StatusNotFound {
		t.Fatal("a store:false response was kept")
	}

	rs := first.Output[0].ID
	bare := responses.ResponseInputItemParamOfReasoning(rs, []responses.ResponseReasoningItemSummaryParam{})
	next := responses.ResponseInputItemParamOfMessage("and now?", responses.EasyInputMessageRoleUser)
	_, err = c.Responses.New(ctx, params(ask, bare, next))
	e := asAPIError(t, err)
	if e.StatusCode != http.StatusNotFound || e.Param != "input" || e.Code != "" || e.Type != "invalid_request_error" ||
		e.Message != "Item with id '"+rs+"' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input." {
		t.Fatalf("bare reasoning: %+v", e)
	}
	if rec := lastRecord(t, srv); rec.Status != http.StatusNotFound || rec.Rule != "" {
		t.Fatalf("refusal recorded as %+v", rec)
	}

	carried := append([]responses.ResponseInputItemUnionParam{ask}, carry(t, first.Output)...)
	carried = append(carried, next)
	if _, err := c.Responses.New(ctx, params(carried...)); err != nil {
		t.Fatalf("reasoning with encrypted content: %v", err)
	}
	no := false
	if rec := lastRecord(t, srv).Conversation; rec.ReasoningItems != 1 || rec.EncryptedReasoningItems != 1 || !reflect.DeepEqual(rec.Store, &no) || rec.Messages != 4 {
		t.Fatalf("recorded %+v", rec)
	}

	// A kept response's reasoning item may come back bare.
	kept, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-sim", Input: inputItems(ask), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow}})
	if err != nil || kept.Output[0].EncryptedContent != "" {
		t.Fatalf("kept reasoning: %v %s", err, kept.RawJSON())
	}
	bare = responses.ResponseInputItemParamOfReasoning(kept.Output[0].ID, []responses.ResponseReasoningItemSummaryParam{})
	if _, err := c.Responses.New(ctx, params(ask, bare)); err != nil {
		t.Fatalf("bare reasoning of a kept response: %v", err)
	}
	if rec := lastRecord(t, srv).Conversation; rec.ReasoningItems != 1 || rec.EncryptedReasoningItems != 0 {
		t.Fatalf("recorded %+v", rec)
	}
}

// GET, DELETE and input_items on kept responses, through the SDK, and the
// API's 404 for one that is not kept.
func TestResponsesKeptRoutesWithTheSDK(t *testing.T) {
	srv, url := startSim(t, responsesScript)
	c := responsesClient(url)
	ctx := context.Background()
	r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-sim", Instructions: openai.String("be brief"), Input: inputItems(
		responses.ResponseInputItemParamOfMessage("one", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("two", responses.EasyInputMessageRoleAssistant),
		responses.ResponseInputItemParamOfMessage("three", responses.EasyInputMessageRoleUser))})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	if err != nil || !jsonEqual(json.RawMessage(got.RawJSON()), json.RawMessage(r.RawJSON())) {
		t.Fatalf("get: %v\n got %s\nwant %s", err, got.RawJSON(), r.RawJSON())
	}

	texts := func(page []responses.ResponseItemUnion) (out []string) {
		for _, it := range page {
			if it.Type != "message" || it.Status != "completed" || it.ID == "" || len(it.Content.OfInputItemContentList) != 1 {
				t.Fatalf("listed item %s", it.RawJSON())
			}
			out = append(out, it.Content.OfInputItemContentList[0].Text)
		}
		return out
	}
	items, err := c.Responses.InputItems.List(ctx, r.ID, responses.InputItemListParams{})
	if err != nil || !reflect.DeepEqual(texts(items.Data), []string{"three", "two", "one"}) || items.HasMore || items.JSON.ExtraFields["first_id"].Raw() != `"`+items.Data[0].ID+`"` {
		t.Fatalf("input items, newest first: %v %s", err, items.RawJSON())
	}
	var paged []responses.ResponseItemUnion
	pager := c.Responses.InputItems.ListAutoPaging(ctx, r.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, Limit: openai.Int(2)})
	for pager.Next() {
		paged = append(paged, pager.Current())
	}
	if err := pager.Err(); err != nil || !reflect.DeepEqual(texts(paged), []string{"one", "two", "three"}) {
		t.Fatalf("paged input items: %v %v", err, texts(paged))
	}

	if err := c.Responses.Delete(ctx, r.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for _, try := range []func() error{
		func() error { _, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}); return err },
		func() error { return c.Responses.Delete(ctx, r.ID) },
		func() error {
			_, err := c.Responses.InputItems.List(ctx, r.ID, responses.InputItemListParams{})
			return err
		},
	} {
		if e := asAPIError(t, try()); e.StatusCode != http.StatusNotFound || e.Message != "Response with id '"+r.ID+"' not found." {
			t.Fatalf("after delete: %+v", e)
		}
	}
	res, err := http.Get(url + "/v1/responses/resp_gone")
	if err != nil {
		t.Fatal(err)
	}
	var body json.RawMessage
	json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if want := `{"error":{"message":"Response with id 'resp_gone' not found.","type":"invalid_request_error","param":null,"code":null}}`; res.StatusCode != 404 || string(body) != want {
		t.Fatalf("%d %s", res.StatusCode, body)
	}

	// Each of these requests is recorded with its path.
	var paths []string
	for _, rec := range srv.Requests()[1:] {
		paths = append(paths, rec.Path)
	}
	if !slices.Contains(paths, "/v1/responses/"+r.ID+"/input_items") || !slices.Contains(paths, "/v1/responses/resp_gone") || lastRecord(t, srv).Status != 404 {
		t.Fatalf("recorded paths %v", paths)
	}
}

// Scripted errors and unmatched requests answer in the API's error shape,
// streaming or not.
func TestResponsesErrorsWithTheSDK(t *testing.T) {
	_, url := startSim(t, noDefaultScript)
	c := responsesClient(url)
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		call := func(text string) error {
			p := responses.ResponseNewParams{Model: "m", Input: userInput(text)}
			if !stream {
				_, err := c.Responses.New(ctx, p)
				return err
			}
			s := c.Responses.NewStreaming(ctx, p)
			defer s.Close()
			for s.Next() {
				t.Fatalf("event %s before the error", s.Current().Type)
			}
			return s.Err()
		}
		if e := asAPIError(t, call("are you busy")); e.StatusCode != 529 || e.Type != "overloaded_error" || e.Message != "try later" {
			t.Errorf("stream=%v scripted error: %+v", stream, e)
		}
		if e := asAPIError(t, call("what now?")); e.StatusCode != 400 || e.Code != "no_matching_rule" || !strings.Contains(e.Message, "responses request") {
			t.Errorf("stream=%v unmatched: %+v", stream, e)
		}
	}
}
