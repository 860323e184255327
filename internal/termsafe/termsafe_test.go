package termsafe

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"trading-api.get_market_context", "trading-api.get_market_context"},
		{"naïve 日本語 ✓ €", "naïve 日本語 ✓ €"},
		{"a\nb", `a\nb`},
		{"a\r\nb\tc", `a\r\nb\tc`},
		{"\x1b[2J\x07", `\x1b[2J\x07`},
		{"\x1b]0;title\x07", `\x1b]0;title\x07`},
		{"\x7f\x00", `\x7f\x00`},
		{"\u0085\u009b", `\u0085\u009b`},
		{"\u202eevil\u202c", `\u202eevil\u202c`},
		{"\u2066x\u2069\u200b\u200f\ufeff", `\u2066x\u2069\u200b\u200f\ufeff`},
		{"\u2028\u2029", `\u2028\u2029`},
		{"\U000e0041", `\U000e0041`},
		{"gpt\xff\xfe", `gpt\xff\xfe`},
		{"\xe2\x80", `\xe2\x80`},
		{"\ufffd", "\ufffd"},
		// Backslashes: doubled only where they would read as an escape.
		{`C:\Program Files\app`, `C:\Program Files\app`},
		{`{"a":"x\"y"}`, `{"a":"x\"y"}`},
		{`a\nb`, `a\\nb`},
		{`\x1b`, `\\x1b`},
		{`\\`, `\\\`},
		{`end\`, `end\`},
		{"\\\n", `\\\n`},
		{"\\\xff", `\\\xff`},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := unescape(t, String(c.in)); got != c.in {
			t.Errorf("unescape(String(%q)) = %q", c.in, got)
		}
	}
}

func TestLines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain line\n\tindented\n", "plain line\n\tindented\n"},
		{"dos\r\nline\r\n", "dos\r\nline\r\n"},
		{"over\rwrite", `over\rwrite`},
		{"end\r", `end\r`},
		{"tool \"x\x1b[2J\" failed\nnext", "tool \"x\\x1b[2J\" failed\nnext"},
		{`already \n escaped \\`, `already \n escaped \\`},
		{"\u202e\xff", `\u202e\xff`},
	} {
		if got := Lines(c.in); got != c.want {
			t.Errorf("Lines(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestJSON(t *testing.T) {
	in := "{\"k\":\"\x7f\u0085\u202e\U000e0041\xff\u00e9\\n\"}"
	want := `{"k":"\u007f\u0085\u202e\udb40\udc41\ufffdé\n"}`
	if got := JSON(in); got != want {
		t.Fatalf("JSON = %s, want %s", got, want)
	}
	doc := []byte("{\n  \"a\": \"\u202e\",\n  \"b\": 1\n}\n")
	if got, want := string(JSONDocument(doc)), "{\n  \"a\": \"\\u202e\",\n  \"b\": 1\n}\n"; got != want {
		t.Fatalf("JSONDocument = %q, want %q", got, want)
	}
	plainDoc := []byte("{\"a\":\"é\"}\n")
	if got := JSONDocument(plainDoc); !bytes.Equal(got, plainDoc) {
		t.Fatalf("JSONDocument changed %q to %q", plainDoc, got)
	}
}

func TestError(t *testing.T) {
	inner := errors.New("server said: \x1b[2J\nclaw: forged")
	err := Error(inner)
	if got, want := err.Error(), `server said: \x1b[2J\nclaw: forged`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, inner) || Error(nil) != nil {
		t.Fatal("Error does not unwrap, or wraps nil")
	}
}

func TestWriter(t *testing.T) {
	in := "line one\r\nst\u00e9p \u202e\x1b[2J\nover\rwrite\n日本\xff\r"
	want := Lines(in[:len(in)-1]) + `\r`
	// Every way of cutting the input into two writes gives the same output.
	for cut := 0; cut <= len(in); cut++ {
		var out bytes.Buffer
		w := NewWriter(&out)
		for _, p := range []string{in[:cut], in[cut:]} {
			if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("cut at %d: %q, want %q", cut, out.String(), want)
		}
	}
}

// unescape reverses String: \\, \n, \r, \t, \xHH (a byte), \uHHHH and
// \UHHHHHHHH (a rune); a backslash before anything else stands for itself.
func unescape(t testing.TB, s string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		digits := 0
		switch s[i+1] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'x':
			digits = 2
		case 'u':
			digits = 4
		case 'U':
			digits = 8
		default:
			b.WriteByte('\\')
			continue
		}
		if digits == 0 {
			i++
			continue
		}
		if i+2+digits > len(s) {
			t.Fatalf("%q: escape cut short at %d", s, i)
		}
		v, err := strconv.ParseUint(s[i+2:i+2+digits], 16, 32)
		if err != nil {
			t.Fatalf("%q: bad escape at %d: %v", s, i, err)
		}
		if digits == 2 {
			b.WriteByte(byte(v))
		} else {
			b.WriteRune(rune(v))
		}
		i += 1 + digits
	}
	return b.String()
}

// terminalSafe reports the first character of s that a terminal could act
// on, other than the newlines and tabs allowed.
func terminalSafe(s string, allowed string) (bad rune, ok bool) {
	if !utf8.ValidString(s) {
		return utf8.RuneError, false
	}
	for _, r := range s {
		if Special(r) && !strings.ContainsRune(allowed, r) {
			return r, false
		}
	}
	return 0, true
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\nb", "\x1b[2J", "\x1b]0;x\x07", "\r", "\u202e", "\xff", `\n`, `\\x`, "\\\x1b", "\u0085", "\U000e0041", "日本\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := String(s)
		if r, ok := terminalSafe(v, ""); !ok {
			t.Fatalf("String(%q) = %q holds %U", s, v, r)
		}
		if got := unescape(t, v); got != s {
			t.Fatalf("String(%q) = %q reads back as %q", s, v, got)
		}
		if plain(s) && v != s {
			t.Fatalf("String(%q) changed a plain string to %q", s, v)
		}
		special := !utf8.ValidString(s) || strings.ContainsFunc(s, Special)
		if !special && !strings.Contains(s, `\`) && v != s {
			t.Fatalf("String(%q) = %q: nothing to escape", s, v)
		}
		if special && v == s {
			t.Fatalf("String(%q) left it as it was", s)
		}

		l := Lines(s)
		if r, ok := terminalSafe(strings.ReplaceAll(l, "\r\n", "\n"), "\n\t"); !ok {
			t.Fatalf("Lines(%q) = %q holds %U", s, l, r)
		}
		if Lines(l) != l || Lines(v) != v {
			t.Fatalf("Lines is not idempotent on %q", s)
		}
		if strings.Count(l, "\n") != strings.Count(s, "\n") {
			t.Fatalf("Lines(%q) = %q changed the lines", s, l)
		}

		var out bytes.Buffer
		w := NewWriter(&out)
		half := len(s) / 2
		_, _ = w.Write([]byte(s[:half]))
		_, _ = w.Write([]byte(s[half:]))
		_ = w.Flush()
		if out.String() != l {
			t.Fatalf("Writer wrote %q, Lines %q", out.String(), l)
		}
	})
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{}`, `"\u001b"`, "\"\u202e\"", "\"\x7f\xff\"", "[\"\U000e0041\", 1, null]", "{\n \"a\": \"\u0085\"\n}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		j := JSON(s)
		if r, ok := terminalSafe(j, ""); !ok {
			t.Fatalf("JSON(%q) = %q holds %U", s, j, r)
		}
		d := string(JSONDocument([]byte(s)))
		if r, ok := terminalSafe(d, "\n"); !ok {
			t.Fatalf("JSONDocument(%q) = %q holds %U", s, d, r)
		}
		if !json.Valid([]byte(s)) {
			return
		}
		var want any
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		for _, got := range []string{d, j} {
			var v any
			if err := json.Unmarshal([]byte(got), &v); err != nil {
				if got == j && strings.ContainsAny(s, "\n\r\t") {
					continue // white space between tokens, escaped on one line
				}
				t.Fatalf("%q escaped to %q: %v", s, got, err)
			}
			a, _ := json.Marshal(want)
			b, _ := json.Marshal(v)
			if !bytes.Equal(a, b) {
				t.Fatalf("%q escaped to %q means %s, not %s", s, got, b, a)
			}
		}
	})
}
