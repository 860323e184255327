// Command openai-runner is a tiny reference agent speaking an OpenAI API
// through the official openai-go SDK: chat completions, or with
// OPENAI_API=responses the Responses API (the whole input each turn,
// store:false), or with OPENAI_API=responses-chain the Responses API
// continuing from previous_response_id. It knows nothing of the pod:
// OPENAI_BASE_URL points it at cllama and OPENAI_API_KEY holds its cllama
// token, as the SDK expects. It carries one runner-native tool (save_note)
// and plays a short scripted conversation, printing a transcript.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/examples/trading-desk/runners/convo"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

var defaultTurns = []convo.Turn{
	{User: "What does my portfolio look like right now?", Stream: true},
	{User: "Save a note with that summary.", Stream: false},
}

func main() { convo.Main("openai-runner", defaultTurns, run) }

func run(ctx context.Context, cfg convo.Config, t *convo.Transcript) error {
	switch api := os.Getenv("OPENAI_API"); api {
	case "", "chat":
	case "responses", "responses-chain":
		return runResponses(ctx, cfg, t, api == "responses-chain")
	default:
		return fmt.Errorf("OPENAI_API=%q: want chat, responses or responses-chain", api)
	}
	client := openai.NewClient() // reads OPENAI_BASE_URL and OPENAI_API_KEY
	notes := &convo.Notes{}
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        convo.NoteToolName,
		Description: openai.String(convo.NoteToolDescription),
		Parameters:  shared.FunctionParameters{"type": "object", "properties": convo.NoteToolProperties, "required": []string{"text"}},
	})}
	var history []openai.ChatCompletionMessageParamUnion
	for _, turn := range cfg.Turns {
		t.Line("user", turn.User)
		history = append(history, openai.UserMessage(turn.User))
		result := convo.TurnResult{User: turn.User, Stream: turn.Stream}
		for step := 0; ; step++ {
			if step == cfg.MaxSteps {
				return fmt.Errorf("turn %q: no answer after %d steps", turn.User, step)
			}
			params := openai.ChatCompletionNewParams{Model: cfg.Model, Messages: history, Tools: tools}
			msg, err := convo.Retry(ctx, 30*time.Second, func() (openai.ChatCompletionMessage, error) {
				return complete(ctx, &client, params, turn.Stream)
			})
			if err != nil {
				return fmt.Errorf("turn %q: %w", turn.User, err)
			}
			history = append(history, msg.ToParam())
			if len(msg.ToolCalls) == 0 {
				result.Answer = msg.Content
				t.Line("assistant", msg.Content)
				break
			}
			for _, call := range msg.ToolCalls {
				out, _ := notes.Run(call.Function.Name, []byte(call.Function.Arguments))
				t.Line("tool", fmt.Sprintf("%s(%s) -> %s [runner-native]", call.Function.Name, call.Function.Arguments, out))
				result.NativeCalls = append(result.NativeCalls, call.Function.Name)
				history = append(history, openai.ToolMessage(out, call.ID))
			}
		}
		t.Turns = append(t.Turns, result)
	}
	return nil
}

// complete makes one model call, streaming or not, and returns the message.
func complete(ctx context.Context, client *openai.Client, params openai.ChatCompletionNewParams, stream bool) (openai.ChatCompletionMessage, error) {
	if !stream {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return openai.ChatCompletionMessage{}, err
		}
		if len(resp.Choices) == 0 {
			return openai.ChatCompletionMessage{}, fmt.Errorf("response has no choices")
		}
		return resp.Choices[0].Message, nil
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	var text strings.Builder
	for s.Next() {
		chunk := s.Current()
		acc.AddChunk(chunk)
		if len(chunk.Choices) > 0 {
			text.WriteString(chunk.Choices[0].Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	if len(acc.Choices) == 0 {
		return openai.ChatCompletionMessage{}, fmt.Errorf("stream carried no choices")
	}
	return acc.Choices[0].Message, nil
}
