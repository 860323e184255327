package console

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzPretty holds the body view to its promise: what a page shows of a
// JSON body decodes to the same value (the escapes it turns back into
// characters stay valid JSON).
func FuzzPretty(f *testing.F) {
	for _, s := range []string{`{"a":"\u003cscript\u003e"}`, `"\\u003c"`, `["\\\u003c", "&\u0026"]`, `{"x":1e3}`, `not json`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw := json.RawMessage(s)
		if len(s) > maxShownBytes/2 || !json.Valid(raw) {
			_ = pretty(raw)
			return
		}
		var want, got any
		_ = json.Unmarshal(raw, &want)
		shown := pretty(raw)
		if err := json.Unmarshal([]byte(shown), &got); err != nil {
			t.Fatalf("%q shown as invalid JSON %q: %v", s, shown, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%q shown as %q: %v != %v", s, shown, got, want)
		}
		if bytes.Contains([]byte(shown), []byte(`\u003c`)) && !bytes.Contains([]byte(s), []byte(`\\u003c`)) {
			t.Fatalf("%q: escape left in %q", s, shown)
		}
	})
}
