package feeds

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidJSON(t *testing.T) {
	for _, s := range []string{
		`{}`, ` [ ] `, `0`, `-0.5e+10`, `1E2`, `"a\u00e9\n\"\\\/"`, `{"a":[1,true,false,null,{"b":"c"}]}`,
		"\t{\"x\" : 1 }\r\n", "\"\xff\"", `[` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `]`,
	} {
		if !validJSON([]byte(s)) || !json.Valid([]byte(s)) {
			t.Errorf("%q: want valid", s)
		}
	}
	for _, s := range []string{
		``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `01`, `1.`, `.5`, `1e`, `-`, `+1`, `tru`, `nul`,
		`"\x"`, `"\u12g4"`, "\"a\nb\"", `"abc`, `[1 2]`, `{} {}`, `truex`, `[1]]`, `{"a":1}}`, `NaN`,
	} {
		if validJSON([]byte(s)) || json.Valid([]byte(s)) {
			t.Errorf("%q: want invalid", s)
		}
	}
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	if validJSON([]byte(deep)) {
		t.Error("nesting past maxDepth accepted")
	}
}

// FuzzValidJSON checks validJSON against json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"messages":[{"role":"system","content":"x"}]}`, `[1,-2.5e3,"\u00e9",null]`, `{"a":tru}`, "\"\x01\"", ` 0 `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}
