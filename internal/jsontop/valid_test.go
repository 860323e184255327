package jsontop

import (
	"encoding/json"
	"slices"
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
	for _, s := range []string{`{"a":[1,2.5e-3,"x\u0041",true,null]}`, `[{"b":{}}]`, `-0`, `"\ud800"`, "{\"a\":\n1}", "[\"\xe2\x82\xac 12345678\"]", "\r\n\"abcdefgh\xff\"",
		`{"messages":[{"role":"system","content":"x"}]}`, `[1,-2.5e3,"\u00e9",null]`, `{"a":tru}`, "\"\x01\"", ` 0 `,
		`["` + strings.Repeat("abcdefgh", 9) + `\n` + strings.Repeat("x", 40) + "\xc3\xa9" + strings.Repeat("y", 33) + `"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := json.Valid(b)
		if got := Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
		// ValidWalk: the same verdict, and on a valid object the same
		// members as Walk.
		type member struct {
			key        string
			start, end int
		}
		var got []member
		valid, object, plain := ValidWalk(b, func(key []byte, start, end int) { got = append(got, member{string(key), start, end}) })
		if valid != want {
			t.Fatalf("ValidWalk(%q) valid = %v, encoding/json says %v", b, valid, want)
		}
		if !valid {
			if plain {
				t.Fatalf("ValidWalk(%q): plain, though invalid", b)
			}
			return
		}
		// plain: ASCII, no raw CR or LF, as scanning b again finds.
		ascii := !slices.ContainsFunc(b, func(c byte) bool { return c >= 0x80 })
		if wantPlain := ascii && !slices.Contains(b, '\n') && !slices.Contains(b, '\r'); plain != wantPlain {
			t.Fatalf("ValidWalk(%q) plain = %v, want %v", b, plain, wantPlain)
		}
		var walked []member
		isObject := Walk(b, func(key []byte, start, end int) bool {
			walked = append(walked, member{string(key), start, end})
			return true
		})
		if object != isObject || !slices.Equal(got, walked) {
			t.Fatalf("ValidWalk(%q) = %v %v, Walk = %v %v", b, object, got, isObject, walked)
		}
	})
}

// The scans must stop at every byte that matters, wherever it falls: in
// a word or in the tail after the last whole one, in the first words of a
// run or in one of nextSpecial's windows (256 bytes, then 512, ...) or at
// their edges.
func TestValidStringsAtEveryOffset(t *testing.T) {
	for _, c := range []byte{'"', '\\', 0x00, 0x1f, 0x7f, 0x80, 0xff, 'a'} {
		for pos := range 1100 {
			s := []byte(`"` + strings.Repeat("a", 1100) + `"`)
			s[1+pos] = c
			want := json.Valid(s)
			if got := Valid(s); got != want {
				t.Fatalf("byte %#x at %d: Valid %v, encoding/json %v", c, pos, got, want)
			}
			// A byte that is not ASCII, wherever it falls, makes the
			// document not plain; so does a line break between tokens.
			_, _, plain := ValidWalk(s, nil)
			if wantPlain := want && c < 0x80; plain != wantPlain {
				t.Fatalf("byte %#x at %d: plain %v, want %v", c, pos, plain, wantPlain)
			}
			if _, _, plain := ValidWalk(append(s, '\n'), nil); plain {
				t.Fatalf("byte %#x at %d: plain with a trailing newline", c, pos)
			}
		}
	}
}

func BenchmarkValid(b *testing.B) {
	docs := []struct{ name, doc string }{
		// Short strings with escapes in each.
		{"escapes", `{"model":"fake/gpt","messages":[` + strings.Repeat(`{"role":"user","content":"lorem ipsum dolor sit amet \u00e9 \"q\""},`, 100) + `{"role":"user","content":"x"}],"temperature":0.2}`},
		// A transcript: messages of a few hundred bytes of plain text.
		{"transcript", `{"model":"fake/gpt","messages":[` + strings.Repeat(`{"role":"user","content":"`+strings.Repeat("portfolio context and a question about positions ", 5)+`"},`, 100) + `{"role":"user","content":"x"}],"temperature":0.2}`},
		// A message of many short runs between escapes (a log pasted
		// with its line breaks): each run's search for the next quote
		// must not run to the end of the string.
		{"runs", `{"model":"fake/gpt","messages":[{"role":"user","content":"` + strings.Repeat(strings.Repeat("a", 40)+`\n`, 5000) + `"}]}`},
		// One 200 KB message of plain text, as a pasted document.
		{"200KB", `{"model":"fake/gpt","messages":[{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor ", 200<<10/18) + `"}]}`},
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

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c", "<&>", "\n\t\x01", "é", "\xff\xfe", "\u2028\u2029"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q: %s, encoding/json %s", s, got[1:], want)
		}
	})
}
