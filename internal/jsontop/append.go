package jsontop

import (
	"unicode/utf8"
)

// escaped holds the bytes encoding/json may not copy as they are: control
// characters, quote and backslash, HTML characters, and every byte of a
// multi-byte (or invalid) sequence.
var escaped = func() (t [256]bool) {
	for c := range t {
		t[c] = c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'
	}
	return t
}()

// AppendString appends s as encoding/json.Marshal writes a string: HTML
// characters escaped, invalid UTF-8 replaced by U+FFFD. Plain ASCII, what
// hand-written encoders mostly meet, is copied as it is.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if escaped[s[i]] {
			b, _ = AppendStringWithin(b, s, -1)
			return b
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
