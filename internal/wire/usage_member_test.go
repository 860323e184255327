package wire

import (
	"encoding/json"
	"testing"
)

// WithUsage re-encodes the members where the body cannot be edited: the
// last of duplicate keys is gone, as a decoder would have dropped it.
func TestWithUsageFallsBackToTheMembers(t *testing.T) {
	body := []byte(`{"usage":1,"id":"a","usage":2}`)
	top, err := DecodeObject(body)
	if err != nil {
		t.Fatal(err)
	}
	out, err := WithUsage(body, top, []byte(`{"n":3}`))
	if err != nil || string(out) != `{"id":"a","usage":{"n":3}}` {
		t.Fatalf("WithUsage = %s, %v", out, err)
	}
	if out, err = WithUsage(nil, map[string]json.RawMessage{"id": json.RawMessage(`"b"`)}, []byte(`7`)); err != nil || string(out) != `{"id":"b","usage":7}` {
		t.Fatalf("WithUsage without a body = %s, %v", out, err)
	}
}
