package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzSplit checks SplitObject and SplitArray against encoding/json.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,{"c":"]}"}],"d":"x\"y","a":2}`, ` { "k\u00e9" : null , "e" : { } } `, `[1, "a", {"b":[]}, [ ], true]`, `[]`, `{}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var wantObj map[string]json.RawMessage
		if json.Unmarshal(data, &wantObj) == nil && wantObj != nil {
			got, err := SplitObject(data)
			if err != nil || len(got) != len(wantObj) {
				t.Fatalf("SplitObject(%s) = %v, %v; want %v", data, got, err, wantObj)
			}
			for k, v := range wantObj {
				if !bytes.Equal(got[k], v) {
					t.Fatalf("member %q = %s, want %s", k, got[k], v)
				}
			}
		}
		var wantArr []json.RawMessage
		if json.Unmarshal(data, &wantArr) == nil {
			got, err := SplitArray(data)
			if err != nil || len(got) != len(wantArr) {
				t.Fatalf("SplitArray(%s) = %v, %v; want %v", data, got, err, wantArr)
			}
			for i := range wantArr {
				if !bytes.Equal(got[i], wantArr[i]) {
					t.Fatalf("element %d = %s, want %s", i, got[i], wantArr[i])
				}
			}
		}
	})
}
