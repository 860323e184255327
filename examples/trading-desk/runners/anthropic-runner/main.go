// Command anthropic-runner is a tiny reference agent speaking the Anthropic
// messages API through the official anthropic-sdk-go. ANTHROPIC_BASE_URL
// points it at cllama and ANTHROPIC_API_KEY holds its cllama token, as the
// SDK expects. It carries one runner-native tool (save_note) and plays a
// short scripted conversation, printing a transcript.
package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/clawdapus/clawgo/examples/trading-desk/runners/convo"
)

var defaultTurns = []convo.Turn{
	{User: "Buy 5 shares of AAPL.", Stream: false},
	{User: "Note down what you just did.", Stream: true},
}

func main() { convo.Main("anthropic-runner", defaultTurns, run) }

func run(ctx context.Context, cfg convo.Config, t *convo.Transcript) error {
	client := anthropic.NewClient() // reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY
	notes := &convo.Notes{}
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
		Name:        convo.NoteToolName,
		Description: anthropic.String(convo.NoteToolDescription),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: convo.NoteToolProperties, Required: []string{"text"}},
	}}}
	var history []anthropic.MessageParam
	for _, turn := range cfg.Turns {
		t.Line("user", turn.User)
		history = append(history, anthropic.NewUserMessage(anthropic.NewTextBlock(turn.User)))
		result := convo.TurnResult{User: turn.User, Stream: turn.Stream}
		for step := 0; ; step++ {
			if step == cfg.MaxSteps {
				return fmt.Errorf("turn %q: no answer after %d steps", turn.User, step)
			}
			params := anthropic.MessageNewParams{Model: anthropic.Model(cfg.Model), MaxTokens: 1024, Messages: history, Tools: tools}
			msg, err := convo.Retry(ctx, 30*time.Second, func() (*anthropic.Message, error) {
				return complete(ctx, &client, params, turn.Stream)
			})
			if err != nil {
				return fmt.Errorf("turn %q: %w", turn.User, err)
			}
			history = append(history, msg.ToParam())
			var text strings.Builder
			var results []anthropic.ContentBlockParamUnion
			for _, block := range msg.Content {
				switch b := block.AsAny().(type) {
				case anthropic.TextBlock:
					text.WriteString(b.Text)
				case anthropic.ToolUseBlock:
					out, isErr := notes.Run(b.Name, b.Input)
					t.Line("tool", fmt.Sprintf("%s(%s) -> %s [runner-native]", b.Name, string(b.Input), out))
					result.NativeCalls = append(result.NativeCalls, b.Name)
					results = append(results, anthropic.NewToolResultBlock(b.ID, out, isErr))
				}
			}
			if len(results) == 0 {
				result.Answer = text.String()
				t.Line("assistant", text.String())
				break
			}
			history = append(history, anthropic.NewUserMessage(results...))
		}
		t.Turns = append(t.Turns, result)
	}
	return nil
}

// complete makes one model call, streaming or not, and returns the message.
func complete(ctx context.Context, client *anthropic.Client, params anthropic.MessageNewParams, stream bool) (*anthropic.Message, error) {
	if !stream {
		return client.Messages.New(ctx, params)
	}
	s := client.Messages.NewStreaming(ctx, params)
	defer s.Close()
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			return nil, err
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return &msg, nil
}
