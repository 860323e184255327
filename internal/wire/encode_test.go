package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// EncodeParts is Encode, with large members and messages referred to
// rather than copied.
func TestEncodePartsIsEncodeWithoutCopies(t *testing.T) {
	big := json.RawMessage(`{"role":"user","content":"` + strings.Repeat("x", 40<<10) + `"}`)
	bigField := json.RawMessage(`"` + strings.Repeat("s", 20<<10) + `"`)
	for _, r := range []*Request{
		{Fields: map[string]json.RawMessage{"model": json.RawMessage(`"m"`)}, Messages: []json.RawMessage{json.RawMessage(`{"role":"user","content":"hi"}`)}},
		{Fields: map[string]json.RawMessage{"model": json.RawMessage(`"m"`), "system": bigField, "z": json.RawMessage(`1`)},
			Messages: []json.RawMessage{big, json.RawMessage(`{"role":"assistant","content":"ok"}`), big, nil},
			Tools:    []json.RawMessage{json.RawMessage(`{"name":"t"}`), big}, MessagesKey: "input"},
		{Messages: []json.RawMessage{big}},
	} {
		whole, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		parts, err := r.EncodeParts()
		if err != nil {
			t.Fatal(err)
		}
		if joined := bytes.Join(parts, nil); !bytes.Equal(joined, whole) {
			t.Fatalf("parts joined:\n%.200s\nEncode:\n%.200s", joined, whole)
		}
		if !json.Valid(whole) {
			t.Fatalf("not JSON: %.200s", whole)
		}
		for _, p := range parts {
			if len(p) >= largeItem && &p[0] != &big[0] && &p[0] != &bigField[0] {
				t.Fatal("a large item was copied into the parts")
			}
		}
	}
}

// A large text's canonical form is its digest: the same text however the
// runner escapes it gives the same form, another text another one, and
// small texts are kept as they are.
func TestCanonContentDigestsLargeTexts(t *testing.T) {
	text := strings.Repeat("é <tag> & text ", largeText/10)
	plain, _ := json.Marshal(text)
	var escaped bytes.Buffer // every non-ASCII rune as \uXXXX, as Python's json.dumps writes it
	for _, r := range string(plain) {
		if r > 127 {
			fmt.Fprintf(&escaped, `\u%04x`, r)
		} else {
			escaped.WriteRune(r)
		}
	}
	a, err := MarshalCanonical(CanonContent(plain, "text"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := MarshalCanonical(CanonContent(escaped.Bytes(), "text"))
	parts, _ := MarshalCanonical(CanonContent(json.RawMessage(`[{"type":"text","text":`+string(plain)+`}]`), "text"))
	if !bytes.Equal(a, b) || !bytes.Equal(a, parts) {
		t.Fatalf("one text, three spellings, canonical forms differ:\n%s\n%s\n%s", a, b, parts)
	}
	if len(a) > 200 || !strings.Contains(string(a), "claw.text_sha256") {
		t.Fatalf("a large text is not its digest: %.200s", a)
	}
	other, _ := json.Marshal(text + "!")
	if c, _ := MarshalCanonical(CanonContent(other, "text")); bytes.Equal(a, c) {
		t.Fatal("two texts, one canonical form")
	}
	if small, _ := MarshalCanonical(CanonContent(json.RawMessage(`"hello"`), "text")); string(small) != `["hello"]` {
		t.Fatalf("small text: %s", small)
	}
}
