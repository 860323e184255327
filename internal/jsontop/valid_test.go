package jsontop

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	good := []string{`{}`, ` [ ] `, `"x"`, `0`, `-0.5e+10`, `1E5`, `true`, `null`, `{"a":[1,{"b":"\u00e9\n"}],"c":false}`, "\"\xff\"",
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000)}
	bad := []string{``, ` `, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `01`, `-`, `1.`, `.5`, `1e`, `+1`, `tru`, `nul`, `"a`, "\"\t\"", `"\x"`, `"\u12"`, `{} {}`, `{'a':1}`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001)}
	for _, s := range good {
		if !Valid([]byte(s)) || !json.Valid([]byte(s)) {
			t.Errorf("Valid(%.40q) = %v, encoding/json %v", s, Valid([]byte(s)), json.Valid([]byte(s)))
		}
	}
	for _, s := range bad {
		if Valid([]byte(s)) || json.Valid([]byte(s)) {
			t.Errorf("Valid(%.40q) = %v, encoding/json %v", s, Valid([]byte(s)), json.Valid([]byte(s)))
		}
	}
}

func TestValidJSON(t *testing.T) {
	for _, s := range []string{
		`{}`, ` [ ] `, `0`, `-0.5e+10`, `1E2`, `"a\u00e9\n\"\\\/"`, `{"a":[1,true,false,null,{"b":"c"}]}`,
		"\t{\"x\" : 1 }\r\n", "\"\xff\"", `[` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `]`,
	} {
		if !Valid([]byte(s)) || !json.Valid([]byte(s)) {
			t.Errorf("%q: want valid", s)
		}
	}
	for _, s := range []string{
		``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `01`, `1.`, `.5`, `1e`, `-`, `+1`, `tru`, `nul`,
		`"\x"`, `"\u12g4"`, "\"a\nb\"", `"abc`, `[1 2]`, `{} {}`, `truex`, `[1]]`, `{"a":1}}`, `NaN`,
	} {
		if Valid([]byte(s)) || json.Valid([]byte(s)) {
			t.Errorf("%q: want invalid", s)
		}
	}
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	if Valid([]byte(deep)) {
		t.Error("nesting past maxDepth accepted")
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e-3,"x\u0041",true,null]}`, `[{"b":{}}]`, `-0`, `"\ud800"`,
		`{"messages":[{"role":"system","content":"x"}]}`, `[1,-2.5e3,"\u00e9",null]`, `{"a":tru}`, "\"\x01\"", ` 0 `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	docs := []struct{ name, doc string }{
		// Short strings with escapes in each.
		{"escapes", `{"model":"fake/gpt","messages":[` + strings.Repeat(`{"role":"user","content":"lorem ipsum dolor sit amet \u00e9 \"q\""},`, 100) + `{"role":"user","content":"x"}],"temperature":0.2}`},
		// A transcript: messages of a few hundred bytes of plain text.
		{"transcript", `{"model":"fake/gpt","messages":[` + strings.Repeat(`{"role":"user","content":"`+strings.Repeat("portfolio context and a question about positions ", 5)+`"},`, 100) + `{"role":"user","content":"x"}],"temperature":0.2}`},
	}
	for _, d := range docs {
		doc := []byte(d.doc)
		b.Run(d.name+"/jsontop", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				Valid(doc)
			}
		})
		b.Run(d.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				json.Valid(doc)
			}
		})
	}
}
