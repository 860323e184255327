// Package termsafe escapes text for the operator's terminal. Whatever an
// agent, a model or a service wrote (a tool name, a model name, an error
// message, a tool's result, a descriptor's description, a container's log
// line) reaches claw's output through it, so that none of it can move the
// cursor, clear the screen, set the window title, ring the bell, start a
// line that looks like claw's own, or reorder and hide text.
//
// Escaped are the C0 controls (newline, carriage return and tab included
// where a value is printed), DEL, the C1 controls (U+0080-U+009F), bytes
// that are not UTF-8, and the Unicode format characters (category Cf: the
// bidi embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069,
// the marks U+200E and U+200F, zero-width characters, tag characters) and
// the line and paragraph separators U+2028 and U+2029. Other printable
// Unicode stays as it is.
//
// String escapes one value as Go would quote it, without the quotes: \n,
// \r, \t, \x1b for the other C0 controls and DEL, \xff for a byte that is
// not UTF-8, \u202e and \U000e0041 for the other characters. A backslash
// that would read as the start of such an escape is doubled, so the
// escaping is reversible: distinct values never look alike, and a value
// without any of these characters is printed unchanged.
//
// Lines is for text of claw's own making that quotes such values (an error
// message, a warning): its newlines and tabs stay, everything else is
// escaped as String does, and backslashes are left alone, so text that
// already holds escaped values passes unchanged. Writer does the same to a
// stream (`claw logs`).
//
// JSON and JSONDocument keep JSON output valid: they only replace DEL,
// C1 and format characters with \u escapes, and bytes that are not UTF-8
// with \ufffd (as encoding/json does in strings, but not in a
// json.RawMessage, and it writes DEL, C1 and format characters raw).
package termsafe

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Special reports whether r is shown escaped: a C0 control, DEL, a C1
// control, a format character, or a line or paragraph separator.
func Special(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r <= 0x9f:
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// String returns s escaped as one value: nothing in it is a control, a
// format character or a byte that is not UTF-8, and its newlines, carriage
// returns and tabs are shown as \n, \r and \t. A string without special
// characters or backslashes is returned as it is.
func String(s string) string {
	if plain(s) {
		return s
	}
	return string(appendValue(make([]byte, 0, len(s)+16), s))
}

// Strings escapes each of ss with String, in a new slice.
func Strings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = String(s)
	}
	return out
}

// Lines returns s with every special character escaped as String escapes
// it, except newlines, tabs and the carriage return of a "\r\n", which
// stay; backslashes are left as they are. Lines(Lines(s)) == Lines(s), and
// Lines(String(s)) == String(s).
func Lines(s string) string {
	if plain(s) {
		return s
	}
	return string(appendLines(make([]byte, 0, len(s)+16), s))
}

// plain reports whether s is printable ASCII without backslashes: what
// every escaping returns unchanged.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// appendValue appends s escaped as String escapes it.
func appendValue(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '\\' {
			b = append(b, c)
			i++
			continue
		}
		if c == '\\' {
			b = append(b, '\\')
			if escapeStart(s[i+1:]) {
				b = append(b, '\\')
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		b = appendRune(b, s[i:i+n], r, n)
		i += n
	}
	return b
}

// appendLines appends s escaped as Lines escapes it.
func appendLines(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' || c == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		b = appendRune(b, s[i:i+n], r, n)
		i += n
	}
	return b
}

// appendRune appends the rune r, n bytes of s (RuneError of one byte: a
// byte that is not UTF-8), as it is or escaped.
func appendRune(b []byte, s string, r rune, n int) []byte {
	switch {
	case r == utf8.RuneError && n == 1:
		return appendHex(append(b, '\\', 'x'), uint32(s[0]), 2)
	case !Special(r):
		return append(b, s...)
	case r == '\n':
		return append(b, '\\', 'n')
	case r == '\r':
		return append(b, '\\', 'r')
	case r == '\t':
		return append(b, '\\', 't')
	case r < 0x80:
		return appendHex(append(b, '\\', 'x'), uint32(r), 2)
	case r <= 0xffff:
		return appendHex(append(b, '\\', 'u'), uint32(r), 4)
	}
	return appendHex(append(b, '\\', 'U'), uint32(r), 8)
}

// escapeStart reports whether a backslash followed by rest would read as
// an escape String writes: rest starts with a letter that names one, a
// backslash, or a character String escapes (its escape starts with one).
func escapeStart(rest string) bool {
	if rest == "" {
		return false
	}
	switch rest[0] {
	case '\\', 'n', 'r', 't', 'x', 'u', 'U':
		return true
	}
	r, n := utf8.DecodeRuneInString(rest)
	return r == utf8.RuneError && n == 1 || Special(r)
}

const hexDigits = "0123456789abcdef"

// appendHex appends v as digits lower-case hex digits.
func appendHex(b []byte, v uint32, digits int) []byte {
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b = append(b, hexDigits[v>>uint(shift)&0xf])
	}
	return b
}

// JSON returns s, a JSON text printed inside a line of text (a tool's
// arguments or result), with every control character, DEL, C1 and format
// character replaced by its \u escape and every byte that is not UTF-8 by
// \ufffd. A valid JSON text stays valid and means the same (apart from
// those bytes, which encoding/json decodes as U+FFFD too).
func JSON(s string) string {
	if plain(s) {
		return s
	}
	return string(appendJSON(make([]byte, 0, len(s)+16), s, false))
}

// JSONDocument returns b, JSON as encoding/json writes it (indented,
// several documents one a line), escaped as JSON escapes a text except
// that newlines stay: in valid JSON they are white space between tokens.
// b itself is returned when nothing needs escaping.
func JSONDocument(b []byte) []byte {
	for _, c := range b {
		if c < 0x20 && c != '\n' || c >= 0x7f {
			return appendJSON(make([]byte, 0, len(b)+16), string(b), true)
		}
	}
	return b
}

// appendJSON appends s with its special characters as JSON \u escapes.
// Every control character, DEL and non-ASCII byte of valid JSON is inside
// a string, where a \u escape means the character itself.
func appendJSON(b []byte, s string, keepNewlines bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= 0x20 && c < 0x7f || c == '\n' && keepNewlines:
			b = append(b, c)
			i++
			continue
		case c < 0x80:
			b = appendHex(append(b, '\\', 'u'), uint32(c), 4)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\ufffd`...)
		case !Special(r):
			b = append(b, s[i:i+n]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			b = appendHex(append(b, '\\', 'u'), uint32(r1), 4)
			b = appendHex(append(b, '\\', 'u'), uint32(r2), 4)
		default:
			b = appendHex(append(b, '\\', 'u'), uint32(r), 4)
		}
		i += n
	}
	return b
}

// Error returns err with its message escaped as one value (String), for an
// error whose text is another program's (a server's error message); it
// unwraps to err. Error(nil) is nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return &escapedError{err}
}

type escapedError struct{ err error }

func (e *escapedError) Error() string { return String(e.err.Error()) }
func (e *escapedError) Unwrap() error { return e.err }
