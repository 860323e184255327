package jsontop

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Encoding JSON strings within a bound, and measuring them, as
// encoding/json.Marshal writes them (HTML-safe escapes, U+2028 and U+2029
// escaped, invalid UTF-8 as U+FFFD): the tool result envelope is cut to
// fit max_tool_result_bytes with these (internal/toolexec).

// Canonical compacts valid JSON and escapes <, >, &, U+2028 and U+2029
// the way encoding/json.Marshal does when it embeds a RawMessage, so the
// size measured here is the size the model is sent whoever marshals the
// envelope. ok is false when b is not valid JSON.
func Canonical(b []byte) (out []byte, ok bool) {
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

// safeASCII marks the bytes a JSON string carries unescaped.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendStringWithin appends s encoded as a JSON string, stopping before the
// encoding would exceed limit bytes (limit < 0: no limit). It cuts only
// between whole runes and reports whether all of s fit.
func AppendStringWithin(dst []byte, s string, limit int) ([]byte, bool) {
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
			case '\b':
				esc, n = [6]byte{'\\', 'b'}, 2
			case '\f':
				esc, n = [6]byte{'\\', 'f'}, 2
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

// StringLen is len(AppendString(nil, s)) without building it.
func StringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
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
