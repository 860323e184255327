package jsontop

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"testing"
)

func TestWithMember(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
		ok               bool
	}{
		{"replaced in place", `{"id":"x", "usage" : {"a":1},"z":[1]}`, `{"id":"x", "usage" : {"n":2},"z":[1]}`, true},
		{"added at the end", `{"id":"x","choices":[]}`, `{"id":"x","choices":[],"usage":{"n":2}}`, true},
		{"added to an empty object", ` { } `, ` { "usage":{"n":2}} `, true},
		{"escaped key matches", `{"us\u0061ge":null}`, `{"us\u0061ge":{"n":2}}`, true},
		{"duplicate key", `{"usage":1,"usage":2}`, "", false},
		{"not an object", `[1]`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := WithMember([]byte(tc.body), "usage", []byte(`{"n":2}`))
			if ok != tc.ok || string(out) != tc.want {
				t.Fatalf("WithMember(%s) = %s, %v; want %s, %v", tc.body, out, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzWithMember: whatever the provider sent, the edited body is JSON with
// the same members as before except the one set.
func FuzzWithMember(f *testing.F) {
	for _, s := range []string{`{}`, `{"usage":null}`, `{"a":"\u00e9","b":[{"usage":1}]}`, ` {"x":1 , "usage" : { } } `, `{"usage":1,"usage":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		top, err := decodeObject(body)
		if err != nil {
			return
		}
		out, ok := WithMember(body, "usage", []byte(`{"total":5}`))
		if !ok {
			return
		}
		got, err := decodeObject(out)
		if err != nil {
			t.Fatalf("edited body is not an object: %s", out)
		}
		want := maps.Clone(top)
		want["usage"] = json.RawMessage(`{"total":5}`)
		if !reflect.DeepEqual(compactAll(t, got), compactAll(t, want)) {
			t.Fatalf("members changed:\n%s\n%s", body, out)
		}
	})
}

func compactAll(t *testing.T, m map[string]json.RawMessage) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			t.Fatal(err)
		}
		out[k] = b.String()
	}
	return out
}

// decodeObject is a JSON object's members as encoding/json decodes them.
func decodeObject(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not an object")
	}
	return m, nil
}
