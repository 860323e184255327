package sdkcompat

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/clawdapus/clawgo/internal/modelsim"
)

// sdkScript drives a two-step tool conversation addressed by canonical
// names while the clients offer provider-safe aliases.
const sdkScript = `
rules:
  - name: ask-weather
    match:
      user_contains: weather
      tool_result: false
      tools_offered: [tools.get_weather]
    reply:
      text: Let me check the weather in Paris for you.
      tool_calls:
        - name: tools.get_weather
          arguments: {city: Paris, units: metric}
  - name: after-weather
    match:
      tool_result_of: tools.get_weather
      tool_result_contains: sunny
    reply:
      text: It is sunny in Paris.
      usage: {input_tokens: 42, output_tokens: 7}
  - name: fallback
    default: true
    reply: {text: Nothing scripted for that.}
`

func startSim(t *testing.T, script string) (*modelsim.Server, string) {
	t.Helper()
	sc, err := modelsim.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := modelsim.NewServer(modelsim.Options{Script: sc, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return srv, serve(t, srv)
}

func serve(t *testing.T, srv *modelsim.Server) string {
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL
}

func sdkCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

const weatherAlias = "tools__get_weather"

func TestOpenAISDK(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			srv, url := startSim(t, sdkScript)
			client := openai.NewClient(openaioption.WithBaseURL(url+"/v1"), openaioption.WithAPIKey("sk-sim"), openaioption.WithMaxRetries(0))
			ctx := sdkCtx(t)
			tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
				Name:       weatherAlias,
				Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
			})}
			params := openai.ChatCompletionNewParams{
				Model:    "openai/gpt-4o",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("What's the weather?")},
				Tools:    tools,
			}

			msg, finish, usage := openAIComplete(t, ctx, &client, params, stream)
			if finish != "tool_calls" || len(msg.ToolCalls) != 1 {
				t.Fatalf("finish %q, tool calls %+v", finish, msg.ToolCalls)
			}
			tc := msg.ToolCalls[0]
			if tc.Function.Name != weatherAlias || tc.ID == "" || tc.Type != "function" {
				t.Fatalf("tool call %+v: want the offered alias", tc)
			}
			var args map[string]string
			if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil || args["city"] != "Paris" {
				t.Fatalf("arguments %q: %v", tc.Function.Arguments, err)
			}
			if msg.Content != "Let me check the weather in Paris for you." {
				t.Fatalf("content %q", msg.Content)
			}
			if usage.PromptTokens == 0 || usage.TotalTokens != usage.PromptTokens+usage.CompletionTokens {
				t.Fatalf("usage %+v", usage)
			}

			params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage(`{"sky":"sunny","temp_c":21}`, tc.ID))
			msg, finish, usage = openAIComplete(t, ctx, &client, params, stream)
			if finish != "stop" || msg.Content != "It is sunny in Paris." || len(msg.ToolCalls) != 0 {
				t.Fatalf("second turn: finish %q content %q calls %d", finish, msg.Content, len(msg.ToolCalls))
			}
			if usage.PromptTokens != 42 || usage.CompletionTokens != 7 {
				t.Fatalf("scripted usage not reported: %+v", usage)
			}

			recs := srv.Requests()
			if len(recs) != 2 || recs[0].Rule != "ask-weather" || recs[1].Rule != "after-weather" {
				t.Fatalf("records %+v", recs)
			}
			if recs[1].ToolResults[0].Name != weatherAlias || recs[0].Auth["Authorization"] != "Bearer sk-sim" || recs[0].System != "be brief" {
				t.Fatalf("record details %+v", recs[1])
			}
		})
	}
}

// openAIComplete makes one call, streaming (with usage) or not.
func openAIComplete(t *testing.T, ctx context.Context, client *openai.Client, params openai.ChatCompletionNewParams, stream bool) (openai.ChatCompletionMessage, string, openai.CompletionUsage) {
	t.Helper()
	if !stream {
		res, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.ID, "chatcmpl-") || res.Object != "chat.completion" {
			t.Fatalf("response id/object %q %q", res.ID, res.Object)
		}
		return res.Choices[0].Message, res.Choices[0].FinishReason, res.Usage
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for s.Next() {
		chunks++
		if !acc.AddChunk(s.Current()) {
			t.Fatalf("accumulator rejected chunk %d: %s", chunks, s.Current().RawJSON())
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 4 {
		t.Fatalf("only %d chunks: not much of a stream", chunks)
	}
	return acc.Choices[0].Message, acc.Choices[0].FinishReason, acc.Usage
}

func TestAnthropicSDK(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			srv, url := startSim(t, sdkScript)
			client := anthropic.NewClient(anthropicoption.WithBaseURL(url), anthropicoption.WithAPIKey("sk-ant-sim"), anthropicoption.WithMaxRetries(0))
			ctx := sdkCtx(t)
			params := anthropic.MessageNewParams{
				Model:     "claude-sonnet-4-5",
				MaxTokens: 256,
				System:    []anthropic.TextBlockParam{{Text: "be brief"}},
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What's the weather?"))},
				Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
					Name:        weatherAlias,
					InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}},
				}}},
			}

			msg := anthropicComplete(t, ctx, &client, params, stream)
			if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 2 {
				t.Fatalf("stop %q content %+v", msg.StopReason, msg.Content)
			}
			text, ok := msg.Content[0].AsAny().(anthropic.TextBlock)
			if !ok || text.Text != "Let me check the weather in Paris for you." {
				t.Fatalf("first block %+v", msg.Content[0])
			}
			use, ok := msg.Content[1].AsAny().(anthropic.ToolUseBlock)
			if !ok || use.Name != weatherAlias || !strings.HasPrefix(use.ID, "toolu_") {
				t.Fatalf("second block %+v", msg.Content[1])
			}
			var args map[string]string
			if err := json.Unmarshal(use.Input, &args); err != nil || args["units"] != "metric" {
				t.Fatalf("input %s: %v", use.Input, err)
			}
			if msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
				t.Fatalf("usage %+v", msg.Usage)
			}

			params.Messages = append(params.Messages, msg.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "sunny, 21C", false)))
			msg = anthropicComplete(t, ctx, &client, params, stream)
			if msg.StopReason != anthropic.StopReasonEndTurn || len(msg.Content) != 1 || msg.Content[0].Text != "It is sunny in Paris." {
				t.Fatalf("second turn: %q %+v", msg.StopReason, msg.Content)
			}
			if msg.Usage.InputTokens != 42 || msg.Usage.OutputTokens != 7 {
				t.Fatalf("scripted usage not reported: %+v", msg.Usage)
			}
			recs := srv.Requests()
			if len(recs) != 2 || recs[1].Rule != "after-weather" || recs[0].Auth["X-Api-Key"] != "sk-ant-sim" || recs[0].System != "be brief" {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

func anthropicComplete(t *testing.T, ctx context.Context, client *anthropic.Client, params anthropic.MessageNewParams, stream bool) *anthropic.Message {
	t.Helper()
	if !stream {
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	s := client.Messages.NewStreaming(ctx, params)
	defer s.Close()
	var msg anthropic.Message
	events := map[string]int{}
	for s.Next() {
		ev := s.Current()
		events[ev.Type]++
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"} {
		if events[want] == 0 {
			t.Fatalf("stream had no %s event: %v", want, events)
		}
	}
	return &msg
}
