package toolexec

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

var fuzzTemplates = []string{
	"/api/v1/items/{id}",
	"/api/{a}/{b}/detail/{claw_id}",
	"/files/{a}{b}.json?format=raw",
	"/x/{claw_id}",
	"/static",
}

// FuzzPrepareHTTP feeds model-controlled arguments through decoding,
// claw_id forcing and request rendering. Whatever the input: no panic; the
// rendered URL keeps the base's scheme and host, has exactly the template's
// segments with the literal ones unchanged, no dot segments from values,
// only the template's own query keys besides the leftover arguments, and
// claw_id, wherever it appears, is the agent's.
func FuzzPrepareHTTP(f *testing.F) {
	for _, s := range []string{
		`{"id":"../x"}`, `{"id":"a/b?c"}`, `{"id":"%2F"}`, `{"a":".","b":"."}`,
		`{"a":"..","b":"x","claw_id":"evil"}`, `{"id":"x#y","q":[1,{"z":null}]}`,
		`null`, ``, `[1]`, `{"id":"\u0000\n"}`, `{"claw_id":"../../admin"}`,
		`{"CLAW_ID":"evil","clawId":"evil","claw-id":"evil"}`,
	} {
		for i := range fuzzTemplates {
			f.Add([]byte(s), uint8(i), i%2 == 0)
		}
	}
	e := New(Options{})
	defer e.Close()
	const agent = "agent-1"
	f.Fuzz(func(t *testing.T, raw []byte, which uint8, get bool) {
		tmpl := fuzzTemplates[int(which)%len(fuzzTemplates)]
		method := "POST"
		if get {
			method = "GET"
		}
		tool := httpTool("http://svc:4000/base", method, tmpl, "")
		args, err := decodeArguments(raw)
		if err != nil {
			return
		}
		forceClawID(args, agent, true)
		req, err := e.prepareHTTP(Call{AgentID: agent, Tool: tool}, args)
		if err != nil {
			return
		}
		u, err := url.Parse(req.url)
		if err != nil {
			t.Fatalf("rendered URL %q does not parse: %v", req.url, err)
		}
		if u.Scheme != "http" || u.Host != "svc:4000" || u.Fragment != "" || u.User != nil {
			t.Fatalf("rendered URL %q escaped its base", req.url)
		}
		gotPath := strings.TrimPrefix(u.EscapedPath(), "/base")
		tmplPath, tmplQuery, _ := strings.Cut(tmpl, "?")
		want := strings.Split(tmplPath, "/")
		got := strings.Split(gotPath, "/")
		if len(got) != len(want) {
			t.Fatalf("template %q rendered %q: %d segments, want %d", tmpl, gotPath, len(got), len(want))
		}
		for i, w := range want {
			if !strings.Contains(w, "{") && got[i] != w {
				t.Fatalf("literal segment %q became %q", w, got[i])
			}
			if strings.Contains(w, "{") {
				dec, err := url.PathUnescape(got[i])
				if err != nil || dec == "." || dec == ".." || dec == "" {
					t.Fatalf("segment %q (from %q) is empty, a dot segment or badly escaped", got[i], w)
				}
			}
			if w == "{claw_id}" && got[i] != agent {
				t.Fatalf("{claw_id} rendered %q", got[i])
			}
		}
		q := u.Query()
		if tmplQuery != "" && q.Get("format") != "raw" {
			t.Fatalf("template query lost: %q", u.RawQuery)
		}
		for k, v := range q {
			if SpellsClawID(k) && (k != "claw_id" || len(v) != 1 || v[0] != agent) {
				t.Fatalf("query %s = %v", k, v)
			}
		}
		if req.body != nil {
			var body map[string]any
			if err := json.Unmarshal(req.body, &body); err != nil {
				t.Fatalf("body is not a JSON object: %q", req.body)
			}
			for k, v := range body {
				if SpellsClawID(k) && (k != "claw_id" || v != agent) {
					t.Fatalf("body %s = %v", k, v)
				}
			}
		}
	})
}

// FuzzBound checks the truncation invariants: the data is valid JSON, a
// truncated envelope stays within the bound, cuts fall on rune boundaries,
// a truncated string is a prefix of the source, and a result cut at the
// read bound reports its size as measured: original_bytes when exact,
// original_bytes_at_least otherwise, never both.
func FuzzBound(f *testing.F) {
	f.Add("hello", 10, true, 0, false)
	f.Add(`{"a":"<b>"}`, 5, false, 0, false)
	f.Add("\"\\\u2028\x01é😀\xff", 40, true, 0, false)
	f.Add("abcdef", 200, true, 1<<40, true)
	f.Add("abcdef", 90, true, 123456789, false)
	f.Fuzz(func(t *testing.T, s string, maxBytes int, text bool, fullSize int, atLeast bool) {
		if maxBytes < 1 || maxBytes > 1<<16 || fullSize < 0 {
			return
		}
		r := result{text: s, isText: true, cut: fullSize > 0, fullSize: fullSize, sizeAtLeast: atLeast}
		if !text {
			canon, ok := jsontop.Canonical([]byte(s))
			if !ok {
				return
			}
			r = result{json: canon}
		}
		env := bound(r, maxBytes)
		if env.OriginalBytes > 0 && env.OriginalBytesAtLeast > 0 {
			t.Fatalf("both original_bytes and original_bytes_at_least: %+v", env)
		}
		if r.cut && (!env.Truncated || (env.OriginalBytesAtLeast > 0) != (atLeast && fullSize > jsontop.StringLen(s))) {
			t.Fatalf("cut result of %d bytes (at least: %v) became %+v", fullSize, atLeast, env)
		}
		if !json.Valid(env.Data) {
			t.Fatalf("data %q is not JSON", env.Data)
		}
		if !env.Truncated {
			return
		}
		whole, _ := json.Marshal(env)
		floor := envelopeOverhead + minDataBudget // below it the data keeps minDataBudget
		if env.OriginalBytesAtLeast > 0 {
			floor += atLeastOverhead
		}
		if n := len(strconv.Itoa(env.OriginalBytes + env.OriginalBytesAtLeast)); n > 12 {
			floor += n - 12
		}
		if maxBytes >= floor && len(whole) > maxBytes {
			t.Fatalf("envelope %d bytes over bound %d", len(whole), maxBytes)
		}
		var got string
		if err := json.Unmarshal(env.Data, &got); err != nil {
			t.Fatal(err)
		}
		src := s
		if !text {
			src = string(r.json)
		}
		if utf8.ValidString(src) && !strings.HasPrefix(src, got) {
			t.Fatalf("%q is not a prefix of %q", got, src)
		}
	})
}
