package mediate

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/wire"
	wireanthropic "github.com/clawdapus/clawgo/internal/wire/anthropic"
)

type anthropicKit struct{}

func (anthropicKit) format() exchange.Format { return wireanthropic.Name }
func (anthropicKit) path() string            { return "/v1/messages" }

func (anthropicKit) namedChoice(name string) map[string]any {
	return map[string]any{"tool_choice": map[string]any{"type": "tool", "name": name}}
}

func (anthropicKit) messages(msgs []tmsg) []any {
	var out []any
	for _, m := range msgs {
		switch m.Role {
		case "user":
			out = append(out, map[string]any{"role": "user", "content": m.Text})
		case "assistant":
			var blocks []any
			if m.Text != "" {
				blocks = append(blocks, map[string]any{"type": "text", "text": m.Text})
			}
			for _, c := range m.Calls {
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(orEmpty(c.Args))})
			}
			if m.Alt && len(m.Calls) == 0 {
				out = append(out, map[string]any{"role": "assistant", "content": m.Text})
				continue
			}
			out = append(out, map[string]any{"role": "assistant", "content": blocks})
		case "tool":
			var blocks []any
			for _, r := range m.Results {
				blocks = append(blocks, map[string]any{"type": "tool_result", "tool_use_id": r.ID, "content": r.Raw})
			}
			out = append(out, map[string]any{"role": "user", "content": blocks})
		}
	}
	return out
}

func orEmpty(s string) string {
	if s == "" {
		return "{}"
	}
	if !json.Valid([]byte(s)) {
		return string(mustJSON(s))
	}
	return s
}

func (k anthropicKit) runnerRequest(msgs []tmsg, tools []string, stream bool, extra map[string]any) []byte {
	top := map[string]any{"model": "up-model", "max_tokens": 1024, "system": "be brief", "messages": k.messages(msgs)}
	var defs []any
	for _, n := range tools {
		defs = append(defs, map[string]any{"name": n, "input_schema": map[string]any{"type": "object"}})
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

func (anthropicKit) upstreamResponse(s step, n int) []byte {
	var blocks []any
	if s.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": s.Text})
	}
	stop := "end_turn"
	for _, c := range s.Calls {
		stop = "tool_use"
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(orEmpty(c.Args))})
	}
	if blocks == nil {
		blocks = []any{}
	}
	return mustJSON(map[string]any{
		"id": "msg_" + string(rune('a'+n)), "type": "message", "role": "assistant", "model": "up-model",
		"content": blocks, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": s.Usage.Input, "output_tokens": s.Usage.Output},
	})
}

func (anthropicKit) decodeUpstream(t *testing.T, body []byte) upReq {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		ToolChoice struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tool_choice"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("upstream request: %v\n%s", err, body)
	}
	u := upReq{Stream: req.Stream, Raw: body, ToolChoice: req.ToolChoice.Name}
	if u.ToolChoice == "" {
		u.ToolChoice = req.ToolChoice.Type
	}
	for _, tl := range req.Tools {
		u.Tools = append(u.Tools, tl.Name)
	}
	for _, m := range req.Messages {
		if s, ok := wire.String(m.Content); ok {
			u.Msgs = append(u.Msgs, tmsg{Role: m.Role, Text: s})
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   string          `json:"content"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			t.Fatalf("upstream message content: %v", err)
		}
		tm := tmsg{Role: m.Role}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				tm.Text += b.Text
			case "tool_use":
				tm.Calls = append(tm.Calls, tcall{b.ID, b.Name, string(b.Input)})
			case "tool_result":
				tm.Role = "tool"
				tm.Results = append(tm.Results, tresult{ID: b.ToolUseID, Raw: b.Content, Env: decodeEnvelope(b.Content)})
			}
		}
		u.Msgs = append(u.Msgs, tm)
	}
	return u
}

func (anthropicKit) decodeFinal(t *testing.T, res *http.Response, stream bool) final {
	t.Helper()
	var msg anthropic.Message
	if stream {
		s := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(res), nil)
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				t.Fatalf("anthropic accumulate: %v", err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatalf("anthropic-sdk-go stream: %v", err)
		}
	} else if err := json.NewDecoder(res.Body).Decode(&msg); err != nil {
		t.Fatalf("anthropic-sdk-go response: %v", err)
	}
	f := final{Usage: wire.Usage{Input: int(msg.Usage.InputTokens), Output: int(msg.Usage.OutputTokens)}}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			f.Text += b.Text
		case "tool_use":
			f.Calls = append(f.Calls, tcall{b.ID, b.Name, string(b.Input)})
		}
	}
	return f
}
