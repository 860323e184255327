package mediate

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/wire"
	wireopenai "github.com/clawdapus/clawgo/internal/wire/openai"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

type openaiKit struct{}

func (openaiKit) format() exchange.Format { return wireopenai.Name }
func (openaiKit) path() string            { return "/v1/chat/completions" }

func (openaiKit) namedChoice(name string) map[string]any {
	return map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": name}}}
}

func (openaiKit) messages(msgs []tmsg) []any {
	var out []any
	for _, m := range msgs {
		switch m.Role {
		case "user":
			out = append(out, map[string]any{"role": "user", "content": m.Text})
		case "assistant":
			am := map[string]any{"role": "assistant", "content": m.Text}
			if m.Text == "" {
				am["content"] = nil
			}
			if m.Alt {
				am["content"] = []any{map[string]any{"type": "text", "text": m.Text}}
				am["refusal"] = nil
			}
			if len(m.Calls) > 0 {
				var calls []any
				for _, c := range m.Calls {
					calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}})
				}
				am["tool_calls"] = calls
			}
			out = append(out, am)
		case "tool":
			for _, r := range m.Results {
				out = append(out, map[string]any{"role": "tool", "tool_call_id": r.ID, "content": r.Raw})
			}
		}
	}
	return out
}

func (k openaiKit) runnerRequest(msgs []tmsg, tools []string, stream bool, extra map[string]any) []byte {
	top := map[string]any{"model": "up-model", "messages": append([]any{map[string]any{"role": "system", "content": "be brief"}}, k.messages(msgs)...)}
	var defs []any
	for _, n := range tools {
		defs = append(defs, map[string]any{"type": "function", "function": map[string]any{"name": n, "parameters": map[string]any{"type": "object"}}})
	}
	if len(defs) > 0 {
		top["tools"] = defs
	}
	if stream {
		top["stream"] = true
		top["stream_options"] = map[string]any{"include_usage": true}
	}
	mergeExtra(top, extra)
	return mustJSON(top)
}

func (openaiKit) upstreamResponse(s step, n int) []byte {
	msg := map[string]any{"role": "assistant", "content": s.Text, "refusal": nil}
	if s.Text == "" {
		msg["content"] = nil
	}
	finish := "stop"
	if len(s.Calls) > 0 {
		finish = "tool_calls"
		var calls []any
		for _, c := range s.Calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"] = calls
	}
	return mustJSON(map[string]any{
		"id": "chatcmpl-" + string(rune('a'+n)), "object": "chat.completion", "created": 1700000000, "model": "up-model",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]any{"prompt_tokens": s.Usage.Input, "completion_tokens": s.Usage.Output, "total_tokens": s.Usage.Input + s.Usage.Output},
	})
}

func (openaiKit) decodeUpstream(t *testing.T, body []byte) upReq {
	t.Helper()
	var req struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice    json.RawMessage `json:"tool_choice"`
		Stream        bool            `json:"stream"`
		StreamOptions json.RawMessage `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("upstream request: %v\n%s", err, body)
	}
	u := upReq{Stream: req.Stream, StreamOpts: req.StreamOptions != nil, Raw: body}
	for _, tl := range req.Tools {
		u.Tools = append(u.Tools, tl.Function.Name)
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(req.ToolChoice, &named) == nil && named.Function.Name != "" {
		u.ToolChoice = named.Function.Name
	} else if s, ok := wire.String(req.ToolChoice); ok {
		u.ToolChoice = s
	}
	for _, m := range req.Messages {
		text, ok := wire.String(m.Content)
		if !ok {
			var parts []struct{ Text string }
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				text += p.Text
			}
		}
		switch m.Role {
		case "system":
			continue
		case "tool":
			r := tresult{ID: m.ToolCallID, Raw: text, Env: decodeEnvelope(text)}
			if n := len(u.Msgs); n > 0 && u.Msgs[n-1].Role == "tool" {
				u.Msgs[n-1].Results = append(u.Msgs[n-1].Results, r)
				continue
			}
			u.Msgs = append(u.Msgs, tmsg{Role: "tool", Results: []tresult{r}})
		default:
			tm := tmsg{Role: m.Role, Text: text}
			for _, c := range m.ToolCalls {
				tm.Calls = append(tm.Calls, tcall{c.ID, c.Function.Name, c.Function.Arguments})
			}
			u.Msgs = append(u.Msgs, tm)
		}
	}
	return u
}

func (openaiKit) decodeFinal(t *testing.T, res *http.Response, stream bool) final {
	t.Helper()
	var cc openai.ChatCompletion
	if stream {
		s := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
		acc := openai.ChatCompletionAccumulator{}
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			t.Fatalf("openai-go stream: %v", err)
		}
		cc = acc.ChatCompletion
	} else if err := json.NewDecoder(res.Body).Decode(&cc); err != nil {
		t.Fatalf("openai-go response: %v", err)
	}
	if len(cc.Choices) == 0 {
		t.Fatalf("no choices in final response")
	}
	f := final{Text: cc.Choices[0].Message.Content, Usage: wire.Usage{Input: int(cc.Usage.PromptTokens), Output: int(cc.Usage.CompletionTokens)}}
	for _, c := range cc.Choices[0].Message.ToolCalls {
		f.Calls = append(f.Calls, tcall{c.ID, c.Function.Name, c.Function.Arguments})
	}
	return f
}
