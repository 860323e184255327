package main

import (
	"context"
	"fmt"
	"time"

	"github.com/clawdapus/clawgo/examples/trading-desk/runners/convo"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// runResponses plays the conversation over the Responses API
// (POST /v1/responses). With chain unset it sends the whole input every
// turn and asks the provider not to store anything (store:false), as
// OpenAI's coding agent does; with chain set it continues each request
// from the previous response's id (previous_response_id) and sends only
// what is new.
func runResponses(ctx context.Context, cfg convo.Config, t *convo.Transcript, chain bool) error {
	client := openai.NewClient() // reads OPENAI_BASE_URL and OPENAI_API_KEY
	notes := &convo.Notes{}
	tools := []responses.ToolUnionParam{responses.ToolParamOfFunction(convo.NoteToolName,
		map[string]any{"type": "object", "properties": convo.NoteToolProperties, "required": []string{"text"}}, false)}
	tools[0].OfFunction.Description = openai.String(convo.NoteToolDescription)
	var (
		input  responses.ResponseInputParam // the whole conversation, or what is new
		prevID string
	)
	for _, turn := range cfg.Turns {
		t.Line("user", turn.User)
		input = append(input, responses.ResponseInputItemParamOfMessage(turn.User, responses.EasyInputMessageRoleUser))
		result := convo.TurnResult{User: turn.User, Stream: turn.Stream}
		for step := 0; ; step++ {
			if step == cfg.MaxSteps {
				return fmt.Errorf("turn %q: no answer after %d steps", turn.User, step)
			}
			params := responses.ResponseNewParams{Model: cfg.Model, Tools: tools,
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
			if chain {
				if prevID != "" {
					params.PreviousResponseID = openai.String(prevID)
				}
			} else {
				params.Store = openai.Bool(false)
			}
			resp, err := convo.Retry(ctx, 30*time.Second, func() (*responses.Response, error) {
				return respond(ctx, &client, params, turn.Stream)
			})
			if err != nil {
				return fmt.Errorf("turn %q: %w", turn.User, err)
			}
			prevID = resp.ID
			if chain {
				input = nil // the provider holds the conversation
			}
			var calls []responses.ResponseOutputItemUnion
			for _, item := range resp.Output {
				switch item.Type {
				case "message":
					if text := messageText(item); text != "" && !chain {
						input = append(input, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleAssistant))
					}
				case "function_call":
					calls = append(calls, item)
					if !chain {
						input = append(input, responses.ResponseInputItemParamOfFunctionCall(item.Arguments.OfString, item.CallID, item.Name))
					}
				}
			}
			if len(calls) == 0 {
				result.Answer = resp.OutputText()
				t.Line("assistant", result.Answer)
				break
			}
			for _, call := range calls {
				out, _ := notes.Run(call.Name, []byte(call.Arguments.OfString))
				t.Line("tool", fmt.Sprintf("%s(%s) -> %s [runner-native]", call.Name, call.Arguments.OfString, out))
				result.NativeCalls = append(result.NativeCalls, call.Name)
				item := responses.ResponseInputItemParamOfFunctionCallOutput(out)
				item.OfFunctionCallOutput.CallID = openai.String(call.CallID)
				input = append(input, item)
			}
		}
		t.Turns = append(t.Turns, result)
	}
	return nil
}

// messageText is the output text of a message item.
func messageText(item responses.ResponseOutputItemUnion) string {
	text := ""
	for _, c := range item.Content {
		if c.Type == "output_text" {
			text += c.Text
		}
	}
	return text
}

// respond makes one Responses call, streaming or not. A stream must be
// one response lifecycle: one response.created, one terminal event, and
// the terminal event's response is the answer.
func respond(ctx context.Context, client *openai.Client, params responses.ResponseNewParams, stream bool) (*responses.Response, error) {
	if !stream {
		return client.Responses.New(ctx, params)
	}
	s := client.Responses.NewStreaming(ctx, params)
	defer s.Close()
	var (
		created int
		final   *responses.Response
	)
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.created":
			created++
		case "response.completed", "response.incomplete", "response.failed":
			if final != nil {
				return nil, fmt.Errorf("stream carried a second terminal event (%s)", ev.Type)
			}
			r := ev.Response
			final = &r
		case "error":
			return nil, fmt.Errorf("stream error: %s %s", ev.Code, ev.Message)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if created != 1 || final == nil {
		return nil, fmt.Errorf("stream carried %d response.created events and %v terminal response; want one lifecycle", created, final != nil)
	}
	if final.Status != "completed" {
		return nil, fmt.Errorf("response ended %s", final.Status)
	}
	return final, nil
}
