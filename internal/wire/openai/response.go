package openai

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// view is the decoded part of a response the format needs again later.
type view struct {
	// raw is the response body; top its members.
	raw     []byte
	top     map[string]json.RawMessage
	message map[string]json.RawMessage
	// calls are the raw tool_calls elements, in order, kept byte for byte
	// (providers attach extra members, e.g. thought signatures, that must
	// be echoed back).
	calls []json.RawMessage
	// created and fingerprint are reused by the synthetic stream.
	created json.RawMessage
}

type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// responseUsage is a response's usage object as ParseResponse reads it.
type responseUsage struct {
	Prompt        int `json:"prompt_tokens"`
	Completion    int `json:"completion_tokens"`
	PromptDetails *struct {
		Cached int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionDetails *struct {
		Reasoning int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// The keys decodeCall and decodeUsage read, in jsontop.StructMembers order.
var (
	callKeys     = []string{"id", "type", "function"}
	functionKeys = []string{"name", "arguments"}
	usageKeysAll = []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"}
	cachedKeys   = []string{"cached_tokens"}
	reasonKeys   = []string{"reasoning_tokens"}
)

// decodeCall decodes one tool call of a checked response (valid JSON) as
// json.Unmarshal would, the common shape with the byte scanner (every
// mediated round has one); arguments is a slice of c, not a copy.
func decodeCall(c []byte, wc *wireCall) error {
	if c[0] == '{' && jsontop.StructMembers(c, 0, callKeys, func(k int, v []byte) bool {
		switch k {
		case 0:
			return jsontop.DecodeString(v, &wc.ID)
		case 1:
			return jsontop.DecodeString(v, &wc.Type)
		}
		if v[0] == 'n' {
			return true
		}
		return v[0] == '{' && jsontop.StructMembers(v, 0, functionKeys, func(k int, v []byte) bool {
			if k == 0 {
				return jsontop.DecodeString(v, &wc.Function.Name)
			}
			wc.Function.Arguments = v
			return true
		})
	}) {
		return nil
	}
	*wc = wireCall{}
	return json.Unmarshal(c, wc)
}

// decodeUsage is decodeCall for a checked response's usage object.
func decodeUsage(raw []byte, u *responseUsage) error {
	if raw[0] == '{' && jsontop.StructMembers(raw, 0, usageKeysAll, func(k int, v []byte) bool {
		switch k {
		case 0:
			return jsontop.DecodeInt(v, &u.Prompt)
		case 1:
			return jsontop.DecodeInt(v, &u.Completion)
		}
		if v[0] == 'n' {
			if k == 2 {
				u.PromptDetails = nil
			} else {
				u.CompletionDetails = nil
			}
			return true
		}
		if v[0] != '{' {
			return false
		}
		if k == 2 {
			u.PromptDetails = &struct {
				Cached int `json:"cached_tokens"`
			}{}
			return jsontop.StructMembers(v, 0, cachedKeys, func(_ int, v []byte) bool { return jsontop.DecodeInt(v, &u.PromptDetails.Cached) })
		}
		u.CompletionDetails = &struct {
			Reasoning int `json:"reasoning_tokens"`
		}{}
		return jsontop.StructMembers(v, 0, reasonKeys, func(_ int, v []byte) bool { return jsontop.DecodeInt(v, &u.CompletionDetails.Reasoning) })
	}) {
		return nil
	}
	*u = responseUsage{}
	return json.Unmarshal(raw, u)
}

// ParseResponse implements wire.ToolLoop. Only choices[0] is considered.
func (Format) ParseResponse(body []byte) (*wire.Response, error) {
	top, err := wire.DecodeObject(body)
	if err != nil {
		return nil, err
	}
	choice, ok := firstChoice(top["choices"])
	if !ok {
		return nil, fmt.Errorf("%w: choices: want a non-empty array of objects", wire.ErrMalformed)
	}
	msg, err := wire.DecodeObject(choice["message"])
	if err != nil {
		return nil, fmt.Errorf("%w: choices[0].message", wire.ErrMalformed)
	}
	resp := &wire.Response{Raw: body}
	resp.ID, _ = wire.String(top["id"])
	resp.Model, _ = wire.String(top["model"])
	resp.Stop, _ = wire.String(choice["finish_reason"])
	resp.Text = contentText(msg["content"])
	v := &view{raw: body, top: top, message: msg, created: top["created"]}
	if raw, ok := msg["tool_calls"]; ok && string(raw) != "null" {
		var ok bool
		if v.calls, ok = wire.Elements(raw); !ok {
			err := json.Unmarshal(raw, &v.calls)
			return nil, fmt.Errorf("%w: tool_calls: %v", wire.ErrMalformed, err)
		}
		for i, c := range v.calls {
			var wc wireCall
			if err := decodeCall(c, &wc); err != nil {
				return nil, fmt.Errorf("%w: tool_calls[%d]: %v", wire.ErrMalformed, i, err)
			}
			args, ok := wire.String(wc.Function.Arguments)
			if !ok { // some providers send an object instead of a string
				args = string(wc.Function.Arguments)
			}
			resp.Calls = append(resp.Calls, wire.Call{ID: wc.ID, Name: wc.Function.Name, Arguments: json.RawMessage(args)})
		}
	}
	if raw, ok := top["usage"]; ok && string(raw) != "null" {
		var u responseUsage
		if err := decodeUsage(raw, &u); err != nil {
			return nil, fmt.Errorf("%w: usage: %v", wire.ErrMalformed, err)
		}
		resp.Usage = wire.Usage{Input: u.Prompt, Output: u.Completion}
		if u.PromptDetails != nil {
			resp.Usage.CachedInput = u.PromptDetails.Cached
		}
		if u.CompletionDetails != nil {
			resp.Usage.Reasoning = u.CompletionDetails.Reasoning
		}
	}
	resp.Priv = v
	return resp, nil
}

// firstChoice is the first element of choices, which must be a non-empty
// array of objects (null elements allowed after the first), as decoding
// it into []map[string]json.RawMessage requires. choices is a member of
// a validated body.
func firstChoice(choices json.RawMessage) (map[string]json.RawMessage, bool) {
	elems, ok := wire.Elements(choices)
	if !ok || len(elems) == 0 {
		return nil, false
	}
	for _, e := range elems {
		if e[0] != '{' && e[0] != 'n' { // an object or null
			return nil, false
		}
	}
	first, err := wire.SplitObject(elems[0])
	return first, err == nil
}

// contentText is the text of a content value: a string, null, or parts.
func contentText(raw json.RawMessage) string {
	if s, ok := wire.String(raw); ok {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	out := ""
	for _, p := range parts {
		if p.Type == "text" {
			out += p.Text
		}
	}
	return out
}

func viewOf(resp *wire.Response) (*view, error) {
	v, ok := resp.Priv.(*view)
	if !ok {
		return nil, fmt.Errorf("openai: response was not parsed by this format")
	}
	return v, nil
}

// AssistantTurn implements wire.ToolLoop: one message, rebuilt from
// role, content and the kept tool_calls; response-only members (refusal,
// annotations, audio) are not sent back.
func (Format) AssistantTurn(resp *wire.Response, keep []int) ([]json.RawMessage, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	content := v.message["content"]
	if len(content) == 0 {
		content = json.RawMessage("null")
	}
	out := map[string]json.RawMessage{"role": json.RawMessage(`"assistant"`), "content": content}
	var calls []json.RawMessage
	if keep == nil {
		calls = v.calls
	} else {
		for _, i := range keep {
			calls = append(calls, v.calls[i])
		}
	}
	if len(calls) > 0 {
		b, err := json.Marshal(calls)
		if err != nil {
			return nil, err
		}
		out["tool_calls"] = b
	}
	return wire.One(json.Marshal(out))
}

// FinalBody implements wire.ToolLoop.
func (Format) FinalBody(resp *wire.Response, total wire.Usage) ([]byte, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	if raw, ok := v.top["usage"]; ok {
		if u, ok := usageInPlace(raw, total); ok {
			return wire.WithUsage(v.raw, v.top, u)
		}
	}
	// No usage object to edit (absent, null, another type, a count
	// named twice): one is encoded.
	raw, present := v.top["usage"]
	u, err := usageEncoded(raw, present, total)
	if err != nil {
		return nil, err
	}
	return wire.WithUsage(v.raw, v.top, u)
}

// usageEncoded is the usage object FinalBody gives where it cannot edit
// the provider's: the provider's members (when raw is an object) with the
// counts set to total's, encoded with its keys sorted.
func usageEncoded(raw json.RawMessage, present bool, total wire.Usage) ([]byte, error) {
	usage := map[string]json.RawMessage{}
	if present {
		_ = json.Unmarshal(raw, &usage)
		if usage == nil {
			usage = map[string]json.RawMessage{}
		}
	}
	usage["prompt_tokens"], _ = json.Marshal(total.Input)
	usage["completion_tokens"], _ = json.Marshal(total.Output)
	usage["total_tokens"], _ = json.Marshal(total.Input + total.Output)
	// The details are summed like the totals they break down.
	setDetail(usage, "prompt_tokens_details", "cached_tokens", total.CachedInput)
	setDetail(usage, "completion_tokens_details", "reasoning_tokens", total.Reasoning)
	return json.Marshal(usage)
}

// usageInPlace returns the provider's usage object raw with its counts set
// to total's, each in place (the provider's member order, and every other
// byte, kept; an absent count is added at the end), as usageEncoded sets
// them. ok is false where raw is not an object or names a count
// or a details object more than once.
func usageInPlace(raw []byte, total wire.Usage) ([]byte, bool) {
	out := raw
	var ok bool
	for _, c := range [...]struct {
		key string
		n   int
	}{{"prompt_tokens", total.Input}, {"completion_tokens", total.Output}, {"total_tokens", total.Input + total.Output}} {
		if out, ok = jsontop.WithMember(out, c.key, strconv.AppendInt(nil, int64(c.n), 10)); !ok {
			return nil, false
		}
	}
	if out, ok = detailInPlace(out, "prompt_tokens_details", "cached_tokens", total.CachedInput); !ok {
		return nil, false
	}
	return detailInPlace(out, "completion_tokens_details", "reasoning_tokens", total.Reasoning)
}

// detailInPlace is setDetail on the usage object's bytes.
func detailInPlace(usage []byte, obj, key string, n int) ([]byte, bool) {
	var d []byte
	count := 0
	jsontop.Walk(usage, func(k []byte, start, end int) bool {
		if jsontop.KeyEquals(k, obj) {
			d, count = usage[start:end], count+1
		}
		return true
	})
	switch {
	case count > 1:
		return nil, false
	case count == 0 || string(d) == "null":
		if n == 0 {
			return usage, true
		}
		d = []byte("{}")
	case d[0] != '{':
		return usage, true // not an object: left as the provider wrote it
	}
	d, ok := jsontop.WithMember(d, key, strconv.AppendInt(nil, int64(n), 10))
	if !ok {
		return nil, false
	}
	return jsontop.WithMember(usage, obj, d)
}

// setDetail sets usage[obj][key] to n, keeping the object's other members;
// an absent object is added only for a non-zero count.
func setDetail(usage map[string]json.RawMessage, obj, key string, n int) {
	var d map[string]json.RawMessage
	if raw, ok := usage[obj]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &d) != nil {
			return // not an object: leave it as the provider wrote it
		}
	}
	if d == nil {
		if n == 0 {
			return
		}
		d = map[string]json.RawMessage{}
	}
	d[key], _ = json.Marshal(n)
	usage[obj], _ = json.Marshal(d)
}
