package history

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendPlain encodes the common entry (a model exchange, with or without
// a tool trace, no withheld tools, its strings plain ASCII) into l the way
// encodeParts's encoding/json path does, byte for byte (the fuzz test holds
// it to that), without reflection: every answered request writes one. It
// reports false, leaving l's parts unset, for any other entry.
func appendPlain(l *line, e *Entry, spliceReq, spliceResp bool) bool {
	if len(e.PolicyFiltered) > 0 || e.Timestamp.Year() < 0 || e.Timestamp.Year() > 9999 {
		return false
	}
	for _, s := range [...]string{e.ID, e.AgentID, e.Pod, e.Format, e.Model, e.Status, e.Error} {
		if !plainString(s) {
			return false
		}
	}
	b := slices.Grow(l.buf[:0], 512+min(len(e.Request), spliceMin)+min(len(e.Response), spliceMin))
	// A body spliced in is a part of its own, between the line's bytes
	// before and after it: where it goes (an offset into b, which may
	// move as it grows) is noted, and the parts are cut at the end.
	var cuts [2]struct {
		at  int
		raw []byte
	}
	n := 0
	b = append(append(append(b, `{"id":"`...), e.ID...), `","timestamp":"`...)
	b = e.Timestamp.AppendFormat(b, time.RFC3339Nano)
	b = append(append(append(b, `","agent_id":"`...), e.AgentID...), '"')
	if e.Pod != "" {
		b = append(append(append(b, `,"pod":"`...), e.Pod...), '"')
	}
	b = append(append(append(b, `,"format":"`...), e.Format...), '"')
	b = append(append(append(b, `,"model":"`...), e.Model...), '"')
	if e.Stream {
		b = append(b, `,"stream":true`...)
	}
	b = append(append(append(b, `,"status":"`...), e.Status...), '"')
	b = strconv.AppendInt(append(b, `,"status_code":`...), int64(e.StatusCode), 10)
	b = strconv.AppendInt(append(b, `,"latency_ms":`...), e.LatencyMS, 10)
	body := func(key string, raw json.RawMessage, splice bool) bool {
		b = append(b, key...)
		switch {
		case splice && len(raw) >= spliceMin:
			cuts[n].at, cuts[n].raw = len(b), bytes.TrimSpace(raw)
			n++
		case splice:
			b = append(b, bytes.TrimSpace(raw)...)
		default:
			var ok bool
			if b, ok = appendRaw(b, raw); !ok {
				return false
			}
		}
		return true
	}
	if !body(`,"request":`, e.Request, spliceReq) {
		return false
	}
	if len(e.Response) > 0 && !body(`,"response":`, e.Response, spliceResp) {
		return false
	}
	b = appendUsage(append(b, `,"usage":`...), e.Usage)
	if !e.CostUSD.IsZero() {
		b = e.CostUSD.AppendJSON(append(b, `,"cost_usd":`...))
	}
	if e.CostUnknown {
		b = append(b, `,"cost_unknown":true`...)
	}
	if len(e.ToolTrace) > 0 {
		var ok bool
		if b, ok = appendTrace(append(b, `,"tool_trace":`...), e.ToolTrace); !ok {
			return false
		}
	}
	if e.Error != "" {
		b = append(append(append(b, `,"error":"`...), e.Error...), '"')
	}
	if e.UTF8Replaced != 0 {
		b = strconv.AppendInt(append(b, `,"utf8_replaced":`...), int64(e.UTF8Replaced), 10)
	}
	b = append(b, "}\n"...)
	l.buf, l.parts = b, l.arr[:0]
	from := 0
	for _, c := range cuts[:n] {
		l.parts = append(l.parts, b[from:c.at], c.raw)
		from = c.at
	}
	l.parts = append(l.parts, b[from:])
	return true
}

// appendUsage appends u as encoding/json encodes a Usage.
func appendUsage(b []byte, u Usage) []byte {
	b = strconv.AppendInt(append(b, `{"prompt_tokens":`...), int64(u.PromptTokens), 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), int64(u.CompletionTokens), 10)
	if u.TotalRounds != 0 {
		b = strconv.AppendInt(append(b, `,"total_rounds":`...), int64(u.TotalRounds), 10)
	}
	return append(b, '}')
}

// appendRaw appends raw as encoding/json encodes a RawMessage: null for
// nil, else compacted; false where encoding/json would fail (raw is not
// JSON).
func appendRaw(b []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(b, "null"...), true
	}
	out := bytes.NewBuffer(b)
	if json.Compact(out, raw) != nil {
		return b, false
	}
	return out.Bytes(), true
}

// appendTrace appends a tool trace as encoding/json encodes it; false for
// a call whose strings are not plain or whose JSON is not valid.
func appendTrace(b []byte, trace []Round) ([]byte, bool) {
	var ok bool
	b = append(b, '[')
	for i, r := range trace {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(b, `{"round":`...), int64(r.Round), 10)
		b = append(b, `,"tool_calls":`...)
		if r.ToolCalls == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for j := range r.ToolCalls {
				if j > 0 {
					b = append(b, ',')
				}
				if b, ok = appendToolCall(b, &r.ToolCalls[j]); !ok {
					return b, false
				}
			}
			b = append(b, ']')
		}
		b = appendUsage(append(b, `,"round_usage":`...), r.RoundUsage)
		if !r.CostUSD.IsZero() {
			b = r.CostUSD.AppendJSON(append(b, `,"cost_usd":`...))
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendToolCall appends one call of a tool trace as encoding/json
// encodes a ToolCall.
func appendToolCall(b []byte, c *ToolCall) ([]byte, bool) {
	if !plainString(c.Name) || !plainString(c.Service) || !plainString(c.Mode) || c.Approval != nil {
		return b, false
	}
	var ok bool
	b = append(append(append(b, `{"name":"`...), c.Name...), `","arguments":`...)
	if b, ok = appendRaw(b, c.Arguments); !ok {
		return b, false
	}
	if len(c.ModelArguments) > 0 {
		if b, ok = appendRaw(append(b, `,"model_arguments":`...), c.ModelArguments); !ok {
			return b, false
		}
	}
	if b, ok = appendRaw(append(b, `,"result":`...), c.Result); !ok {
		return b, false
	}
	if c.StartMS != nil {
		b = strconv.AppendInt(append(b, `,"start_ms":`...), *c.StartMS, 10)
	}
	b = strconv.AppendInt(append(b, `,"latency_ms":`...), c.LatencyMS, 10)
	b = append(append(append(b, `,"service":"`...), c.Service...), '"')
	if c.Mode != "" {
		b = append(append(append(b, `,"mode":"`...), c.Mode...), '"')
	}
	if c.DuplicateOfRound != 0 {
		b = strconv.AppendInt(append(b, `,"duplicate_of_round":`...), int64(c.DuplicateOfRound), 10)
	}
	if c.DuplicateCount != 0 {
		b = strconv.AppendInt(append(b, `,"duplicate_count":`...), int64(c.DuplicateCount), 10)
	}
	return append(b, '}'), true
}

// plainString reports whether s encodes as itself between quotes: ASCII
// without quotes, backslashes or control characters.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
