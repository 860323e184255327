package jsontop

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFind(t *testing.T) {
	doc := []byte(` { "a" : {"usage":1}, "s":"}\"usage\"", "usage" : {"x":[1,{"y":2}]} , "n":null}`)
	v, ok := Find(doc, "usage")
	if !ok || string(v) != `{"x":[1,{"y":2}]}` {
		t.Fatalf("%q %v", v, ok)
	}
	if v, ok := Find(doc, "n"); !ok || string(v) != "null" {
		t.Fatalf("%q", v)
	}
	if _, ok := Find(doc, "missing"); ok {
		t.Fatal("found missing")
	}
	if v, ok := Find([]byte(`{"us\u0061ge":3}`), "usage"); !ok || string(v) != "3" {
		t.Fatalf("escaped key: %q", v)
	}
	for _, bad := range []string{``, `[]`, `{"a"`, `{"a":`, `{"a":"x`, `{"a":{}`, `{"a" 1}`, `{"a":}`, `{1:2}`} {
		if Walk([]byte(bad), func([]byte, int, int) bool { return true }) {
			t.Errorf("Walk(%q) ok", bad)
		}
	}
}

// FuzzFind: never panics; on valid JSON objects, agrees with encoding/json
// (first occurrence of a key).
func FuzzFind(f *testing.F) {
	f.Add([]byte(`{"usage":{"prompt_tokens":1},"choices":[{"x":"\"}"}]}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"\u0075":true}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var members []string
		ok := Walk(b, func(k []byte, s, e int) bool {
			if s < 0 || e > len(b) || s >= e {
				t.Fatalf("bad span %d:%d of %d", s, e, len(b))
			}
			members = append(members, string(k))
			return true
		})
		if !json.Valid(b) {
			return
		}
		var doc map[string]json.RawMessage
		if json.Unmarshal(b, &doc) != nil {
			if ok {
				// Valid JSON that is not an object must not walk.
				t.Fatalf("walked a non-object %q", b)
			}
			return
		}
		if !ok {
			t.Fatalf("Walk failed on a valid object %q", b)
		}
		for k, want := range doc {
			got, found := Find(b, k)
			if !found {
				t.Fatalf("key %q not found", k)
			}
			// encoding/json keeps the last duplicate; compare only
			// when the key is unique.
			n := 0
			for _, m := range members {
				if KeyEquals([]byte(m), k) {
					n++
				}
			}
			var a, c any
			if n == 1 && (json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &c) != nil) {
				t.Fatalf("key %q: value %q vs %q", k, got, want)
			}
		}
	})
}

func TestElementsAndUnquote(t *testing.T) {
	doc := []byte(` [ 1 , "a\"]" , {"b":[2]}, [ ] ]`)
	var got []string
	for start, end := range Elements(doc, 1) {
		got = append(got, string(doc[start:end]))
	}
	if want := []string{`1`, `"a\"]"`, `{"b":[2]}`, `[ ]`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Elements = %q, want %q", got, want)
	}
	for range Elements(doc, 0) {
		t.Fatal("yielded for a non-array")
	}
	if !Empty([]byte(`[ ]`), 0) || !Empty([]byte(`{ }`), 0) || Empty([]byte(`[1]`), 0) {
		t.Fatal("Empty")
	}
	for lit, want := range map[string]string{`"x"`: "x", `"\u00e9\n"`: "é\n", "\"\xff\"": "\ufffd"} {
		if s, err := Unquote([]byte(lit)); err != nil || s != want {
			t.Errorf("Unquote(%s) = %q, %v", lit, s, err)
		}
	}
	if _, err := Unquote([]byte(`1`)); err == nil {
		t.Error("Unquote(1) succeeded")
	}
	if s, err := DecodeKey([]byte(`us\u0061ge`)); err != nil || s != "usage" {
		t.Errorf("DecodeKey = %q, %v", s, err)
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s", "<script>&amp;", "\x00\x1f\t\n\r", "é😀", "\u2028\u2029", "bad\xff\xfe", strings.Repeat("ab", 100)} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if n := StringLen(s); n != len(want) {
			t.Errorf("StringLen(%q) = %d, want %d", s, n, len(want))
		}
	}
}

// FuzzAppendStringWithin holds the bounded encoder to encoding/json: with
// no bound it writes what json.Marshal writes and StringLen measures it;
// within a bound it writes a valid JSON string, no longer than the bound,
// that decodes to a prefix of s (for valid UTF-8).
func FuzzAppendStringWithin(f *testing.F) {
	f.Add("plain", 10)
	f.Add("<é\u2028\xff>", 7)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		want, _ := json.Marshal(s)
		if got, ok := AppendStringWithin(nil, s, -1); string(got) != string(want) || !ok {
			t.Fatalf("unbounded %s, want %s", got, want)
		}
		if StringLen(s) != len(want) {
			t.Fatalf("StringLen %d, want %d", StringLen(s), len(want))
		}
		if limit < 2 || limit > 1<<16 {
			return
		}
		got, all := AppendStringWithin(nil, s, limit)
		var back string
		if err := json.Unmarshal(got, &back); err != nil || len(got) > limit {
			t.Fatalf("bounded %q (limit %d): %v", got, limit, err)
		}
		if all != (len(want) <= limit) {
			t.Fatalf("all = %v for %d of %d bytes", all, len(want), limit)
		}
		if utf8.ValidString(s) && !strings.HasPrefix(s, back) {
			t.Fatalf("%q is not a prefix of %q", back, s)
		}
	})
}
