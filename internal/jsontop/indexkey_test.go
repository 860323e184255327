package jsontop

import (
	"bytes"
	"testing"
)

// FuzzIndexKey holds IndexKey to bytes.Index.
func FuzzIndexKey(f *testing.F) {
	f.Add([]byte(`{"id":"x","usage":{"a":1}}`), "usage")
	f.Add([]byte(`{"x":"usage","usage":1}`), "usage")
	f.Add([]byte(`usage"`), "usage")
	f.Add([]byte(`""finish_reason"`), "finish_reason")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		key := []byte(`"` + name + `"`)
		if got, want := IndexKey(data, key), bytes.Index(data, key); got != want {
			t.Fatalf("IndexKey(%q, %q) = %d, bytes.Index %d", data, key, got, want)
		}
	})
}
