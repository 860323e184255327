package mediate

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/wire"
	wireresponses "github.com/clawdapus/clawgo/internal/wire/responses"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// responsesKit speaks the OpenAI Responses API: a conversation is input
// items, an assistant turn is a message item and function_call items, and
// results are function_call_output items.
type responsesKit struct{}

func (responsesKit) format() exchange.Format { return wireresponses.Name }
func (responsesKit) path() string            { return "/v1/responses" }

func (responsesKit) namedChoice(name string) map[string]any {
	return map[string]any{"tool_choice": map[string]any{"type": "function", "name": name}}
}

func (responsesKit) items(msgs []tmsg) []any {
	var out []any
	for _, m := range msgs {
		switch m.Role {
		case "user":
			if m.Alt {
				out = append(out, map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": m.Text}}})
				continue
			}
			out = append(out, map[string]any{"role": "user", "content": m.Text})
		case "assistant":
			if m.Text != "" {
				if m.Alt {
					// As the API returned it: typed, with id, status and parts.
					out = append(out, map[string]any{"type": "message", "id": "msg_x", "status": "completed", "role": "assistant",
						"content": []any{map[string]any{"type": "output_text", "text": m.Text, "annotations": []any{}}}})
				} else {
					out = append(out, map[string]any{"role": "assistant", "content": m.Text})
				}
			}
			for _, c := range m.Calls {
				item := map[string]any{"type": "function_call", "call_id": c.ID, "name": c.Name, "arguments": c.Args}
				if m.Alt {
					item["id"], item["status"] = "fc_"+c.ID, "completed"
				}
				out = append(out, item)
			}
		case "tool":
			for _, r := range m.Results {
				out = append(out, map[string]any{"type": "function_call_output", "call_id": r.ID, "output": r.Raw})
			}
		}
	}
	return out
}

func (k responsesKit) runnerRequest(msgs []tmsg, tools []string, stream bool, extra map[string]any) []byte {
	top := map[string]any{"model": "up-model", "instructions": "be brief", "input": k.items(msgs)}
	var defs []any
	for _, n := range tools {
		defs = append(defs, map[string]any{"type": "function", "name": n, "parameters": map[string]any{"type": "object"}, "strict": false})
	}
	if len(defs) > 0 {
		top["tools"] = defs
	}
	if stream {
		top["stream"] = true
	}
	mergeExtra(top, extra)
	return mustJSON(top)
}

func (responsesKit) upstreamResponse(s step, n int) []byte {
	var output []any
	if s.Text != "" || len(s.Calls) == 0 {
		output = append(output, map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": s.Text, "annotations": []any{}}}})
	}
	for _, c := range s.Calls {
		output = append(output, map[string]any{"type": "function_call", "id": "fc_" + c.ID, "call_id": c.ID, "name": c.Name, "arguments": c.Args, "status": "completed"})
	}
	usage := map[string]any{"input_tokens": s.Usage.Input, "output_tokens": s.Usage.Output, "total_tokens": s.Usage.Input + s.Usage.Output,
		"input_tokens_details": map[string]any{"cached_tokens": s.Usage.CachedInput}, "output_tokens_details": map[string]any{"reasoning_tokens": s.Usage.Reasoning}}
	return mustJSON(map[string]any{"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": 1700000000, "status": "completed",
		"model": "up-model", "output": output, "usage": usage, "error": nil, "incomplete_details": nil})
}

func (responsesKit) decodeUpstream(t *testing.T, body []byte) upReq {
	t.Helper()
	var req struct {
		Input []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			CallID  string          `json:"call_id"`
			Name    string          `json:"name"`
			Args    string          `json:"arguments"`
			Output  string          `json:"output"`
		} `json:"input"`
		Tools []struct {
			Name string `json:"name"`
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
		u.Tools = append(u.Tools, tl.Name)
	}
	var named struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(req.ToolChoice, &named) == nil && named.Name != "" {
		u.ToolChoice = named.Name
	} else if s, ok := wire.String(req.ToolChoice); ok {
		u.ToolChoice = s
	}
	last := func(role string) *tmsg {
		if n := len(u.Msgs); n > 0 && u.Msgs[n-1].Role == role {
			return &u.Msgs[n-1]
		}
		u.Msgs = append(u.Msgs, tmsg{Role: role})
		return &u.Msgs[len(u.Msgs)-1]
	}
	for _, it := range req.Input {
		switch it.Type {
		case "", "message":
			text, ok := wire.String(it.Content)
			if !ok {
				var parts []struct{ Text string }
				_ = json.Unmarshal(it.Content, &parts)
				for _, p := range parts {
					text += p.Text
				}
			}
			switch it.Role {
			case "system", "developer":
				continue
			case "assistant":
				m := last("assistant")
				m.Text += text
			default:
				u.Msgs = append(u.Msgs, tmsg{Role: it.Role, Text: text})
			}
		case "function_call":
			m := last("assistant")
			m.Calls = append(m.Calls, tcall{it.CallID, it.Name, it.Args})
		case "function_call_output":
			m := last("tool")
			m.Results = append(m.Results, tresult{ID: it.CallID, Raw: it.Output, Env: decodeEnvelope(it.Output)})
		}
	}
	return u
}

func (responsesKit) decodeFinal(t *testing.T, res *http.Response, stream bool) final {
	t.Helper()
	var resp responses.Response
	if stream {
		s := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(res), nil)
		var (
			acc     responses.ResponseAccumulator
			created int
			done    bool
		)
		for s.Next() {
			ev := s.Current()
			var union responses.ResponsesServerEventUnion
			if err := json.Unmarshal([]byte(ev.RawJSON()), &union); err != nil {
				t.Fatalf("event %s: %v", ev.Type, err)
			}
			// The SDK's accumulator refuses a second lifecycle or an
			// event of another response.
			if err := acc.AddEvent(union); err != nil {
				t.Fatalf("the SDK's accumulator refused %s: %v", ev.Type, err)
			}
			switch ev.Type {
			case "response.created":
				created++
			case "response.completed":
				resp, done = ev.Response, true
			}
		}
		if err := s.Err(); err != nil {
			t.Fatalf("openai-go stream: %v", err)
		}
		if created != 1 || !done || acc.Snapshot().ResponseID != resp.ID {
			t.Fatalf("want one response lifecycle: %d response.created, completed %v, accumulated %+v", created, done, acc.Snapshot())
		}
	} else if err := json.NewDecoder(res.Body).Decode(&resp); err != nil {
		t.Fatalf("openai-go response: %v", err)
	}
	f := final{Text: resp.OutputText(), Usage: wire.Usage{Input: int(resp.Usage.InputTokens), Output: int(resp.Usage.OutputTokens)}}
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			f.Calls = append(f.Calls, tcall{it.CallID, it.Name, it.Arguments.OfString})
		}
	}
	return f
}
