package wire

import (
	"encoding/json"
	"testing"
)

// FuzzString holds String to encoding/json's verdict and value for a
// string member.
func FuzzString(f *testing.F) {
	for _, s := range []string{``, `null`, ` null`, `"a"`, ` "a"`, `"a\u00e9\n"`, `[1,"a"]`, `{"a":"b"}`, `12`, `true`, `nul`, `"x`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := String(raw)
		var want string
		err := json.Unmarshal(raw, &want)
		if len(raw) == 0 {
			err, want = nil, ""
		}
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("String(%q) = %q, %v; encoding/json: %q, %v", raw, got, ok, want, err)
		}
	})
}
