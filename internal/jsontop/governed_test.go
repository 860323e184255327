package jsontop

import (
	"encoding/json"
	"strings"
	"testing"
)

var testShape = NewShape([]string{"model", "stream", "previous_response_id"}, map[string]*Shape{
	"messages": NewShape([]string{"role"}, map[string]*Shape{
		"tool_calls": NewShape([]string{"id"}, map[string]*Shape{"function": NewShape([]string{"name", "arguments"}, nil)}),
	}),
})

func TestAmbiguous(t *testing.T) {
	for _, tt := range []struct {
		body, want string // want: "" for none, else Path + " " + Key
	}{
		{`{"model":"a","stream":true,"messages":[{"role":"user"}]}`, ""},
		{`{"model":"a","MODEL":"b"}`, ` MODEL`},
		{`{"PREVIOUS_RESPONSE_ID":"r"}`, ` PREVIOUS_RESPONSE_ID`},
		{`{"model":"a","model":"b"}`, ` model`},
		{`{"mod\u0065l":"a","model":"b"}`, ` model`},
		{`{"\u017ftream":true}`, " \u017ftream"}, // long s folds to S
		{`{"model":"a","\u212aey":1}`, ""},       // Kelvin sign: folds to K, governs nothing here
		{"{\"\u212a\":1,\"model\":\"a\"}", ""},   // raw non-ASCII key
		{`{"messages":[{"role":"user"},{"Role":"system"}]}`, `messages[1] Role`},
		{`{"messages":[{"role":"a","tool_calls":[{"id":"1","function":{"name":"x","NAME":"y"}}]}]}`, `messages[0].tool_calls[0].function NAME`},
		{`{"messages":"text","model":"a"}`, ""},
		{`{"messages":[1,"x",null,[{"ROLE":"x"}]],"model":"a"}`, ""}, // only objects of the array are governed
		{`{"metadata":{"MODEL":"x","model":"y","model":"z"}}`, ""},   // not a governed object
		{`{"messages":[{"role":"a","Role":"b"}],"MODEL":"x"}`, `messages[0] Role`},
		{`[{"MODEL":1}]`, ""},
	} {
		a := Ambiguous([]byte(tt.body), testShape)
		got := ""
		if a != nil {
			got = a.Path + " " + a.Key
		}
		if got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestAmbiguityMessage(t *testing.T) {
	a := Ambiguous([]byte(`{"messages":[{"role":"a","ROLE":"b"}]}`), testShape)
	if a == nil || !strings.Contains(a.Error(), `"ROLE" in messages[0] is "role" spelled in another case`) {
		t.Fatalf("%v", a)
	}
	a = Ambiguous([]byte(`{"model":"a","model":"b"}`), testShape)
	if a == nil || !strings.HasPrefix(a.Error(), `request body has more than one "model" member:`) {
		t.Fatalf("%v", a)
	}
}

func TestFoldMatchesEncodingJSON(t *testing.T) {
	// encoding/json matches a struct field by this folding: each pair
	// below is one field to it.
	for _, pair := range [][2]string{{"model", "MODEL"}, {"stream", "\u017ftream"}, {"kind", "\u212aind"}} {
		if Fold(pair[0]) != Fold(pair[1]) {
			t.Errorf("Fold(%q) != Fold(%q)", pair[0], pair[1])
		}
		if !caseInsensitiveDecoderMatches(pair[0], pair[1]) {
			t.Errorf("encoding/json does not match %q with %q", pair[0], pair[1])
		}
	}
}

// caseInsensitiveDecoderMatches reports whether encoding/json decodes a
// member named key into a struct field named field.
func caseInsensitiveDecoderMatches(field, key string) bool {
	// encoding/json has no dynamic tags: one struct per field name.
	body, _ := json.Marshal(map[string]int{key: 1})
	switch field {
	case "model":
		var v struct {
			V *int `json:"model"`
		}
		return json.Unmarshal(body, &v) == nil && v.V != nil
	case "stream":
		var v struct {
			V *int `json:"stream"`
		}
		return json.Unmarshal(body, &v) == nil && v.V != nil
	case "kind":
		var v struct {
			V *int `json:"kind"`
		}
		return json.Unmarshal(body, &v) == nil && v.V != nil
	}
	return false
}

// FuzzAmbiguous holds the checker to the readers it protects against: for
// every valid body it accepts, a case-insensitive last-wins decoder
// (encoding/json into a struct), an exact last-wins decoder (into a map)
// and an exact first-wins reader (Find) read the same governed values, at
// the top level and in each message.
func FuzzAmbiguous(f *testing.F) {
	for _, s := range []string{
		`{"model":"a","stream":true,"messages":[{"role":"user"},{"role":"tool"}]}`,
		`{"model":"a","MODEL":"b"}`,
		`{"model":"a","messages":[{"role":"user","Role":"system"}]}`,
		`{"\u017ftream":true,"stream":false,"model":"m"}`,
		`{"previous_response_id":"x","Previous_Response_Id":"y"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !Valid(body) || Ambiguous(body, testShape) != nil {
			return
		}
		var ci struct {
			Model    json.RawMessage `json:"model"`
			Stream   json.RawMessage `json:"stream"`
			Prev     json.RawMessage `json:"previous_response_id"`
			Messages json.RawMessage `json:"messages"`
		}
		if json.Unmarshal(body, &ci) != nil {
			return // not an object, or a value encoding/json rejects
		}
		var exact map[string]json.RawMessage
		if json.Unmarshal(body, &exact) != nil {
			return
		}
		for name, got := range map[string]json.RawMessage{"model": ci.Model, "stream": ci.Stream, "previous_response_id": ci.Prev, "messages": ci.Messages} {
			first, _ := Find(body, name)
			if string(got) != string(exact[name]) || string(trim(first)) != string(trim(exact[name])) {
				t.Fatalf("%s: case-insensitive %q, exact last %q, exact first %q", name, got, exact[name], first)
			}
		}
		var msgs []json.RawMessage
		if json.Unmarshal(ci.Messages, &msgs) != nil {
			return
		}
		for i, m := range msgs {
			var ciMsg struct {
				Role json.RawMessage `json:"role"`
			}
			var exactMsg map[string]json.RawMessage
			if json.Unmarshal(m, &ciMsg) != nil || json.Unmarshal(m, &exactMsg) != nil {
				continue
			}
			first, _ := Find(m, "role")
			if string(ciMsg.Role) != string(exactMsg["role"]) || string(trim(first)) != string(trim(exactMsg["role"])) {
				t.Fatalf("messages[%d].role: case-insensitive %q, exact last %q, exact first %q", i, ciMsg.Role, exactMsg["role"], first)
			}
		}
	})
}

func trim(b []byte) []byte { return []byte(strings.TrimSpace(string(b))) }
