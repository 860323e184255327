package sdkcompat

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/clawdapus/clawgo/internal/modelsim"
)

// TestSampleScriptConversations plays the sample trading-desk script the
// way a proxy and runners would: the test executes every tool itself and
// checks each rule fires once, in order, with no loops.
func TestSampleScriptConversations(t *testing.T) {
	sc, err := modelsim.LoadScript("testdata/trading-desk.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := modelsim.NewServer(modelsim.Options{Script: sc})
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, srv)
	ctx := sdkCtx(t)

	t.Run("analyst over OpenAI", func(t *testing.T) {
		client := openai.NewClient(openaioption.WithBaseURL(url+"/v1"), openaioption.WithAPIKey("k"), openaioption.WithMaxRetries(0))
		tool := func(name string) openai.ChatCompletionToolUnionParam {
			return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: name, Parameters: shared.FunctionParameters{"type": "object"}})
		}
		params := openai.ChatCompletionNewParams{Model: "scripted-analyst", Tools: []openai.ChatCompletionToolUnionParam{tool("save_note"), tool("trading-api__get_market_context")}}
		results := map[string]string{"trading-api__get_market_context": `{"balance":50000}`, "save_note": "saved", "trading-api.execute_trade": `{"ok":false,"error":"not granted"}`}
		var rules []string
		for i, user := range []string{"What does my portfolio look like right now?", "Save a note with that summary.", "Buy 5 shares of AAPL."} {
			params.Messages = append(params.Messages, openai.UserMessage(user))
			for step := 0; ; step++ {
				if step == 4 {
					t.Fatalf("turn %q loops", user)
				}
				msg, _, _ := openAIComplete(t, ctx, &client, params, i%2 == 0)
				params.Messages = append(params.Messages, msg.ToParam())
				if len(msg.ToolCalls) == 0 {
					break
				}
				for _, tc := range msg.ToolCalls {
					params.Messages = append(params.Messages, openai.ToolMessage(results[tc.Function.Name], tc.ID))
				}
			}
		}
		for _, r := range srv.Requests() {
			rules = append(rules, r.Rule)
		}
		want := []string{"analyst-portfolio", "market-context-answer", "save-note", "note-saved", "analyst-buy-attempt", "trade-refused"}
		if !equal(rules, want) {
			t.Fatalf("rules %v, want %v", rules, want)
		}
	})

	t.Run("executor over Anthropic", func(t *testing.T) {
		before := len(srv.Requests())
		client := anthropic.NewClient(anthropicoption.WithBaseURL(url), anthropicoption.WithAPIKey("k"), anthropicoption.WithMaxRetries(0))
		tool := func(name string) anthropic.ToolUnionParam {
			return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: name, InputSchema: anthropic.ToolInputSchemaParam{}}}
		}
		params := anthropic.MessageNewParams{Model: "scripted-executor", MaxTokens: 256,
			Tools: []anthropic.ToolUnionParam{tool("save_note"), tool("trading-api__get_market_context"), tool("trading-api__execute_trade")}}
		results := map[string]string{"trading-api__execute_trade": `{"status":"filled"}`, "save_note": "saved"}
		for i, user := range []string{"Buy 5 shares of AAPL.", "Note down what you just did."} {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(user)))
			for step := 0; ; step++ {
				if step == 4 {
					t.Fatalf("turn %q loops", user)
				}
				msg := anthropicComplete(t, ctx, &client, params, i == 1)
				params.Messages = append(params.Messages, msg.ToParam())
				var blocks []anthropic.ContentBlockParamUnion
				for _, b := range msg.Content {
					if use, ok := b.AsAny().(anthropic.ToolUseBlock); ok {
						blocks = append(blocks, anthropic.NewToolResultBlock(use.ID, results[use.Name], false))
					}
				}
				if len(blocks) == 0 {
					break
				}
				params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
			}
		}
		var rules []string
		for _, r := range srv.Requests()[before:] {
			rules = append(rules, r.Rule)
		}
		want := []string{"executor-buy", "trade-filled", "save-note", "note-saved"}
		if !equal(rules, want) {
			t.Fatalf("rules %v, want %v", rules, want)
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
