package toolexec

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// envelopeOverhead is what a truncated envelope adds around its data:
// {"ok":true,"data":,"truncated":true,"original_bytes":NNNNNNNNNNNN}.
// Data is cut to the bound minus this, so the whole envelope, marshalled,
// stays within max_tool_result_bytes.
const envelopeOverhead = len(`{"ok":true,"data":,"truncated":true,"original_bytes":}`) + 12

// minDataBudget keeps a useful prefix even under absurdly small bounds.
const minDataBudget = 32

// canonicalJSON compacts valid JSON and escapes <, >, &, U+2028 and U+2029
// the way encoding/json.Marshal does when it embeds a RawMessage, so the
// size measured here is the size the model is sent whoever marshals the
// envelope. ok is false when b is not valid JSON.
func canonicalJSON(b []byte) (out []byte, ok bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || !json.Valid(b) {
		return nil, false
	}
	var compact bytes.Buffer
	compact.Grow(len(b))
	if err := json.Compact(&compact, b); err != nil {
		return nil, false
	}
	var esc bytes.Buffer
	esc.Grow(compact.Len())
	json.HTMLEscape(&esc, compact.Bytes())
	return esc.Bytes(), true
}

// jsonString encodes s as a JSON string exactly as encoding/json.Marshal
// would (HTML-safe escapes, invalid UTF-8 as U+FFFD).
func jsonString(s string) []byte {
	out, _ := appendJSONString(make([]byte, 0, len(s)+2), s, -1)
	return out
}

// appendJSONString appends s encoded as a JSON string, stopping before the
// encoding would exceed limit bytes (limit < 0: no limit). It cuts only
// between whole runes and reports whether all of s fit.
func appendJSONString(dst []byte, s string, limit int) ([]byte, bool) {
	const hex = "0123456789abcdef"
	start := len(dst)
	dst = append(dst, '"')
	fits := func(n int) bool { return limit < 0 || len(dst)-start+n+1 <= limit }
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			var esc []byte
			switch {
			case c == '"' || c == '\\':
				esc = []byte{'\\', c}
			case c == '\n':
				esc = []byte(`\n`)
			case c == '\r':
				esc = []byte(`\r`)
			case c == '\t':
				esc = []byte(`\t`)
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				esc = []byte{'\\', 'u', '0', '0', hex[c>>4], hex[c&0xF]}
			}
			n := 1
			if esc != nil {
				n = len(esc)
			}
			if !fits(n) {
				return append(dst, '"'), false
			}
			if esc != nil {
				dst = append(dst, esc...)
			} else {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if !fits(6) {
				return append(dst, '"'), false
			}
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			if !fits(6) {
				return append(dst, '"'), false
			}
			dst = append(dst, `\u202`...)
			dst = append(dst, hex[r&0xF])
		default:
			if !fits(size) {
				return append(dst, '"'), false
			}
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"'), true
}

// result is a service's answer before it is bounded: either JSON (data is
// canonical JSON) or text (the raw text, sent as a JSON string).
type result struct {
	json []byte
	text string
	// isText selects text over json.
	isText bool
	// cut reports that the service's answer was longer than what was read;
	// fullSize is then its true size when known.
	cut      bool
	fullSize int
}

// size is the serialized size of the result as data.
func (r result) size() int {
	if r.isText {
		return len(jsonString(r.text))
	}
	return len(r.json)
}

// bound turns a result into a success envelope no larger than maxBytes when
// marshalled. Over the bound, data becomes a JSON string holding the first
// bytes of the text (or of the JSON's serialization), cut on a rune
// boundary, with truncated:true and original_bytes set (spec 000 "Budgets").
func bound(r result, maxBytes int) Envelope {
	var full []byte
	if r.isText {
		full = jsonString(r.text)
	} else {
		full = r.json
	}
	size := len(full)
	if r.cut && r.fullSize > size {
		size = r.fullSize
	}
	if !r.cut && (maxBytes <= 0 || len(full) <= maxBytes) {
		return Envelope{OK: true, Data: full}
	}
	budget := maxBytes - envelopeOverhead - (len(strconv.Itoa(size)) - 12)
	if budget < minDataBudget {
		budget = minDataBudget
	}
	src := r.text
	if !r.isText {
		src = string(r.json)
	}
	data, _ := appendJSONString(make([]byte, 0, budget), src, budget)
	return Envelope{OK: true, Data: data, Truncated: true, OriginalBytes: size}
}
