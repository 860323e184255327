package mediate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// The official SDK clients, pointed at a Mediator, must parse the synthetic
// streams (keepalive comments included), the JSON answers, handed-back
// native calls and in-stream errors (issue 3 "Prove it with the official
// openai-go and anthropic-sdk-go streaming clients").

func TestOpenAISDKClient(t *testing.T) {
	h := newHarness(t, openaiKit{}, harnessOptions{keepalive: 20 * time.Millisecond})
	client := openai.NewClient(option.WithBaseURL(h.front.URL+"/v1/"), option.WithAPIKey("agent-token"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:    "up-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "shell", Parameters: shared.FunctionParameters{"type": "object"}})},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	ctx := context.Background()

	t.Run("stream after a slow managed round", func(t *testing.T) {
		h.up.script = append(h.up.script, step{Calls: []tcall{call("c1", slow, `{}`)}, Usage: u(5, 1)}, step{Text: "final answer", Usage: u(7, 2)})
		s := client.Chat.Completions.NewStreaming(ctx, params)
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != "final answer" {
			t.Errorf("content %q", got)
		}
		if acc.Usage.PromptTokens != 12 || acc.Usage.CompletionTokens != 3 || acc.Usage.TotalTokens != 15 {
			t.Errorf("usage %+v", acc.Usage)
		}
	})
	t.Run("stream where the provider stays rate limited: the SDK raises its typed error", func(t *testing.T) {
		busy := step{Status: 429, Raw: `{"error":{"type":"requests","code":"rate_limit_exceeded","message":"slow down"}}`}
		h.up.script = append(h.up.script, step{Calls: []tcall{call("c9", slow, `{}`)}}, busy, busy, busy, busy)
		s := client.Chat.Completions.NewStreaming(ctx, params)
		for s.Next() {
		}
		// openai-go raises an in-band error with the event's error object;
		// an answer before the stream began is an *openai.Error (429).
		err := s.Err()
		var apiErr *openai.Error
		inBand := err != nil && strings.Contains(err.Error(), `"code":"rate_limit_exceeded"`) && strings.Contains(err.Error(), "429")
		if !inBand && !(errors.As(err, &apiErr) && apiErr.StatusCode == 429) {
			t.Fatalf("stream error %v, want the provider's rate limit (code rate_limit_exceeded)", err)
		}
	})
	t.Run("stream handing back a native call", func(t *testing.T) {
		h.up.script = append(h.up.script, step{Calls: []tcall{call("n1", "shell", `{"cmd":"ls"}`)}})
		s := client.Chat.Completions.NewStreaming(ctx, params)
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		tc := acc.Choices[0].Message.ToolCalls
		if len(tc) != 1 || tc[0].ID != "n1" || tc[0].Function.Name != "shell" || tc[0].Function.Arguments != `{"cmd":"ls"}` || acc.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("tool calls %+v", acc.Choices[0])
		}
	})
	t.Run("non-streaming", func(t *testing.T) {
		h.up.script = append(h.up.script, step{Calls: []tcall{call("c2", echo, `{"q":"x"}`)}}, step{Text: "plain"})
		cc, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if cc.Choices[0].Message.Content != "plain" {
			t.Errorf("content %q", cc.Choices[0].Message.Content)
		}
	})
	t.Run("budget exhausted in-stream", func(t *testing.T) {
		h.agent.Tools.Policy.MaxRounds = 1
		defer func() { h.agent.Tools.Policy.MaxRounds = 8 }()
		h.up.script = append(h.up.script, step{Calls: []tcall{call("c3", slow, `{"n":1}`)}}, step{Calls: []tcall{call("c4", slow, `{"n":2}`)}})
		s := client.Chat.Completions.NewStreaming(ctx, params)
		for s.Next() {
		}
		if s.Err() == nil {
			t.Fatal("no error from an exhausted stream")
		}
	})
}

func TestAnthropicSDKClient(t *testing.T) {
	h := newHarness(t, anthropicKit{}, harnessOptions{keepalive: 20 * time.Millisecond})
	client := anthropic.NewClient(aoption.WithBaseURL(h.front.URL), aoption.WithAPIKey("agent-token"), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model:     "up-model",
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))},
		Tools:     []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{}, "shell")},
	}
	ctx := context.Background()

	t.Run("stream after a slow managed round", func(t *testing.T) {
		h.up.script = append(h.up.script, step{Calls: []tcall{call("c1", slow, `{}`)}, Usage: u(5, 1)}, step{Text: "final answer", Usage: u(7, 2)})
		s := client.Messages.NewStreaming(ctx, params)
		var msg anthropic.Message
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) != 1 || msg.Content[0].Text != "final answer" || msg.StopReason != "end_turn" {
			t.Errorf("message %+v", msg)
		}
		if msg.Usage.InputTokens != 12 || msg.Usage.OutputTokens != 3 {
			t.Errorf("usage %+v", msg.Usage)
		}
	})
	t.Run("stream where the provider stays busy: the SDK raises its typed error", func(t *testing.T) {
		busy := step{Status: 529, Raw: `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`}
		h.up.script = append(h.up.script, step{Calls: []tcall{call("c9", slow, `{}`)}}, busy, busy, busy, busy)
		s := client.Messages.NewStreaming(ctx, params)
		for s.Next() {
		}
		err := s.Err()
		if err == nil || !strings.Contains(err.Error(), "overloaded_error") || !strings.Contains(err.Error(), "529") {
			t.Fatalf("stream error %v, want the provider's overloaded_error (529)", err)
		}
	})
	t.Run("stream handing back a native call", func(t *testing.T) {
		h.up.script = append(h.up.script, step{Text: "let me look", Calls: []tcall{call("n1", "shell", `{"cmd":"ls"}`)}})
		s := client.Messages.NewStreaming(ctx, params)
		var msg anthropic.Message
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) != 2 || msg.Content[1].Type != "tool_use" || msg.Content[1].Name != "shell" || string(msg.Content[1].Input) != `{"cmd":"ls"}` || msg.StopReason != "tool_use" {
			t.Errorf("message %+v", msg)
		}
	})
	t.Run("non-streaming", func(t *testing.T) {
		h.up.script = append(h.up.script, step{Calls: []tcall{call("c2", echo, `{"q":"x"}`)}}, step{Text: "plain"})
		msg, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Content[0].Text != "plain" {
			t.Errorf("message %+v", msg)
		}
	})
	t.Run("budget exhausted before any keepalive is a 502", func(t *testing.T) {
		h.agent.Tools.Policy.MaxRounds = 1
		defer func() { h.agent.Tools.Policy.MaxRounds = 8 }()
		h.up.script = append(h.up.script, step{Calls: []tcall{call("c3", echo, `{"q":"1"}`)}}, step{Calls: []tcall{call("c4", echo, `{"q":"2"}`)}})
		_, err := client.Messages.New(ctx, params)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 {
			t.Fatalf("err = %v", err)
		}
	})
}
