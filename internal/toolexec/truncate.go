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
// stays within max_tool_result_bytes. A size that is only a lower bound
// is named original_bytes_at_least, atLeastOverhead bytes longer.
const (
	envelopeOverhead = len(`{"ok":true,"data":,"truncated":true,"original_bytes":}`) + 12
	atLeastOverhead  = len(`_at_least`)
)

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

// safeASCII marks the bytes a JSON string carries unescaped.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s encoded as a JSON string, stopping before the
// encoding would exceed limit bytes (limit < 0: no limit). It cuts only
// between whole runes and reports whether all of s fit.
func appendJSONString(dst []byte, s string, limit int) ([]byte, bool) {
	const hex = "0123456789abcdef"
	start := len(dst)
	dst = append(dst, '"')
	// room is what is left before the closing quote.
	room := func() int {
		if limit < 0 {
			return len(s) * 6
		}
		return limit - (len(dst) - start) - 1
	}
	for i := 0; i < len(s); {
		// Copy a run of safe ASCII at once.
		j := i
		for j < len(s) && s[j] < utf8.RuneSelf && safeASCII[s[j]] {
			j++
		}
		if j > i {
			if r := room(); j-i > r {
				dst = append(dst, s[i:i+max(r, 0)]...)
				return append(dst, '"'), false
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			var esc [6]byte
			var n int
			switch c {
			case '"', '\\':
				esc, n = [6]byte{'\\', c}, 2
			case '\n':
				esc, n = [6]byte{'\\', 'n'}, 2
			case '\r':
				esc, n = [6]byte{'\\', 'r'}, 2
			case '\t':
				esc, n = [6]byte{'\\', 't'}, 2
			default: // control characters and <, >, &
				esc, n = [6]byte{'\\', 'u', '0', '0', hex[c>>4], hex[c&0xF]}, 6
			}
			if room() < n {
				return append(dst, '"'), false
			}
			dst = append(dst, esc[:n]...)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if room() < 6 {
				return append(dst, '"'), false
			}
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			if room() < 6 {
				return append(dst, '"'), false
			}
			dst = append(dst, `\u202`...)
			dst = append(dst, hex[r&0xF])
		default:
			if room() < size {
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
	// fullSize is then its size: exact, or a lower bound when sizeAtLeast
	// (the rest was not all counted).
	cut         bool
	fullSize    int
	sizeAtLeast bool
}

// Cut is a success envelope of data (valid JSON) within maxBytes: data as
// it is when its serialized envelope fits, else bound's cut with
// truncated and original_bytes. It is how a result that reached the
// caller over the cap is cut (internal/toolcall), the same rule as a
// result cut here.
func Cut(data json.RawMessage, maxBytes int) Envelope {
	return bound(result{json: data}, maxBytes)
}

// bound turns a result into a success envelope. Data whose serialized size
// exceeds maxBytes becomes a JSON string holding the first bytes of the
// text (or of the JSON's serialization), cut on a rune boundary so that the
// whole truncated envelope, marshalled, stays within maxBytes; truncated is
// set and original_bytes is the true size (spec 000 "Budgets"), or, when
// the size was not all counted, original_bytes_at_least a lower bound.
func bound(r result, maxBytes int) Envelope {
	size := len(r.json)
	if r.isText {
		size = encodedLen(r.text)
	}
	atLeast := false
	if r.cut && r.fullSize > size {
		size, atLeast = r.fullSize, r.sizeAtLeast
	}
	if !r.cut && (maxBytes <= 0 || size <= maxBytes) {
		if r.isText {
			return Envelope{OK: true, Data: jsonString(r.text)}
		}
		return Envelope{OK: true, Data: r.json}
	}
	budget := maxBytes - envelopeOverhead - (len(strconv.Itoa(size)) - 12)
	if atLeast {
		budget -= atLeastOverhead
	}
	if budget < minDataBudget {
		budget = minDataBudget
	}
	// Every source byte costs at least one output byte, so no more than
	// budget bytes of the source can be needed.
	src := r.text
	if !r.isText {
		src = string(r.json[:min(len(r.json), budget)])
	}
	data, _ := appendJSONString(make([]byte, 0, budget), src, budget)
	if atLeast {
		return Envelope{OK: true, Data: data, Truncated: true, OriginalBytesAtLeast: size}
	}
	return Envelope{OK: true, Data: data, Truncated: true, OriginalBytes: size}
}

// encodedLen is len(jsonString(s)) without building it.
func encodedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}
