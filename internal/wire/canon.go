package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// CanonicalJSON re-encodes a JSON value with object keys sorted, no
// insignificant whitespace, no HTML escaping and numbers kept as written.
// Two values equal as JSON documents (up to number spelling) give equal
// bytes; duplicate detection and continuity keys rely on it.
func CanonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return marshalCanonical(v)
}

func marshalCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// MarshalCanonical encodes v (a value built from maps, slices and scalars)
// the way CanonicalJSON does.
func MarshalCanonical(v any) ([]byte, error) { return marshalCanonical(v) }

// Borrowed is a raw JSON value decoded by json.Unmarshal without a copy:
// it keeps the slice of the document it came from (json.RawMessage copies).
// Only for documents that are not modified while the value is in use, as
// the proxy's bodies never are: a transcript holding a large document is
// then not copied again to be read.
type Borrowed []byte

// UnmarshalJSON keeps data: json.Unmarshal passes a slice of its input.
func (b *Borrowed) UnmarshalJSON(data []byte) error {
	*b = data
	return nil
}

// ObjectArguments returns raw as canonical JSON when it is a JSON object,
// treating empty input as {}. Models sometimes send malformed arguments; the
// error lets the caller answer with invalid_arguments instead of calling
// the service.
func ObjectArguments(raw []byte) ([]byte, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return []byte("{}"), nil
	}
	if t[0] != '{' {
		return nil, fmt.Errorf("arguments must be a JSON object")
	}
	c, err := CanonicalJSON(t)
	if err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	return c, nil
}

// DecodeObject decodes a JSON object into a map of raw members. The
// members are slices of raw (capacity capped: appending to one copies it),
// not copies: raw must not change while they are in use. It validates raw
// once and splits it without decoding (what encoding/json accepts, with
// its error text for what it does not).
func DecodeObject(raw []byte) (map[string]json.RawMessage, error) {
	if i := jsontop.SkipSpace(raw, 0); i < len(raw) && raw[i] == '{' && jsontop.Valid(raw) {
		return SplitObject(raw)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	return m, nil
}

// String decodes a raw JSON string member; absent or null gives "".
func String(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	if c := raw[0]; c != '"' && c != 'n' && !jsontop.IsSpace(c) {
		// An array, object, number or bool: encoding/json would refuse
		// it too, but only after validating all of it (a Responses
		// input list is most of its request).
		return "", false
	}
	// jsontop.Unquote needs no decoder for a plain string without
	// escapes, the common case for message content.
	s, err := jsontop.Unquote(raw)
	if err != nil {
		return "", false
	}
	return s, true
}

// Bool decodes a raw JSON bool member; absent or null gives false.
func Bool(raw json.RawMessage) bool {
	var b bool
	_ = json.Unmarshal(raw, &b)
	return b
}

// Quote returns s as a JSON string.
func Quote(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// ChunkText splits s into pieces of at most n bytes on rune boundaries, so
// a synthetic stream looks like one. An empty s gives no pieces.
func ChunkText(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// JoinText concatenates text pieces.
func JoinText(parts []string) string { return strings.Join(parts, "") }

// TrimTexts trims surrounding white space from the text items of a
// canonical content list and drops the ones left empty: runners often
// strip an answer's leading or trailing new lines before sending it back.
// A text of largeText bytes or more then becomes its digest.
func TrimTexts(items []any) []any {
	return digestLargeTexts(trimTexts(items))
}

func trimTexts(items []any) []any {
	out := items[:0]
	for _, it := range items {
		if s, ok := it.(string); ok {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			it = s
		}
		out = append(out, it)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// CanonContent reduces message content (a string, null, or parts) to
// merged text and canonical non-text parts: a string, null and "" equal
// the equivalent parts. textParts names the part types that carry text.
func CanonContent(raw json.RawMessage, textParts ...string) []any {
	return canonContent(raw, textParts)
}

// largeText is the length from which a canonical text is its digest.
const largeText = 64 << 10

// digestLargeTexts replaces each text of largeText bytes or more by its
// SHA-256: canonical forms are hashed, never read back, and encoding a
// large text again (escaped, in a growing buffer) cost several times its
// size in memory for a transcript holding a large document.
func digestLargeTexts(items []any) []any {
	for i, it := range items {
		if s, ok := it.(string); ok && len(s) >= largeText {
			h := sha256.New()
			var buf [32 << 10]byte // no copy of the whole text
			for j := 0; j < len(s); j += len(buf) {
				h.Write(buf[:copy(buf[:], s[j:])])
			}
			items[i] = map[string]string{"type": "claw.text_sha256", "sha256": hex.EncodeToString(h.Sum(nil))}
		}
	}
	return items
}

func canonContent(raw json.RawMessage, textParts []string) []any {
	if s, ok := String(raw); ok {
		return TrimTexts([]any{s})
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return []any{string(raw)}
	}
	var out []any
	for _, p := range parts {
		var tp struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(p, &tp)
		if slices.Contains(textParts, tp.Type) {
			if tp.Text == "" {
				continue
			}
			if n := len(out); n > 0 {
				if prev, ok := out[n-1].(string); ok {
					out[n-1] = prev + tp.Text
					continue
				}
			}
			out = append(out, tp.Text)
			continue
		}
		if cp, err := CanonicalJSON(p); err == nil {
			out = append(out, json.RawMessage(cp))
		}
	}
	return TrimTexts(out)
}

// CanonArgs canonicalises a tool call's arguments string holding JSON
// (or, from some providers, the JSON value itself); other text is kept as
// is.
func CanonArgs(raw json.RawMessage) string {
	s, ok := String(raw)
	if !ok {
		s = string(raw)
	}
	if c, err := CanonicalJSON([]byte(s)); err == nil {
		return string(c)
	}
	return s
}
