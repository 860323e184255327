package anthropic

import (
	"encoding/json"
	"strings"
	"testing"
)

// A large text in a message, as a string or in text blocks, is hashed
// into its canonical form rather than copied into it.
func TestCanonicalLargeTextIsItsDigest(t *testing.T) {
	text, _ := json.Marshal(strings.Repeat("a large document ", 8<<10))
	asString, err := Format{}.Canonical(json.RawMessage(`{"role":"user","content":` + string(text) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	asBlocks, err := Format{}.Canonical(json.RawMessage(`{"role":"user","content":[{"type":"text","text":` + string(text) + `}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(asString.Bytes) != string(asBlocks.Bytes) || len(asString.Bytes) > 300 || !strings.Contains(string(asString.Bytes), "claw.text_sha256") {
		t.Fatalf("canonical forms:\n%.300s\n%.300s", asString.Bytes, asBlocks.Bytes)
	}
}
