package history

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendPlain encodes the common entry (a model exchange without a tool
// trace or withheld tools, its strings plain ASCII) into l the way
// encodeParts's encoding/json path does, byte for byte (the fuzz test holds
// it to that), without reflection: every answered request writes one. It
// reports false, leaving l's parts unset, for any other entry.
func appendPlain(l *line, e *Entry, spliceReq, spliceResp bool) bool {
	if len(e.ToolTrace) > 0 || len(e.PolicyFiltered) > 0 || e.Timestamp.Year() < 0 || e.Timestamp.Year() > 9999 {
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
		case raw == nil:
			b = append(b, "null"...)
		default:
			// What encoding/json does with a RawMessage: compact it.
			var out bytes.Buffer
			if json.Compact(&out, raw) != nil {
				return false
			}
			b = append(b, out.Bytes()...)
		}
		return true
	}
	if !body(`,"request":`, e.Request, spliceReq) {
		return false
	}
	if len(e.Response) > 0 && !body(`,"response":`, e.Response, spliceResp) {
		return false
	}
	b = strconv.AppendInt(append(b, `,"usage":{"prompt_tokens":`...), int64(e.Usage.PromptTokens), 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), int64(e.Usage.CompletionTokens), 10)
	if e.Usage.TotalRounds != 0 {
		b = strconv.AppendInt(append(b, `,"total_rounds":`...), int64(e.Usage.TotalRounds), 10)
	}
	b = append(b, '}')
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
