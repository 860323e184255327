package feeds

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/clawdapus/clawgo/internal/exchange"
)

// The injectors splice bytes; these cases spell out the whole output, so any
// byte of the runner's request that moves or changes shows up.

func TestInjectOpenAI(t *testing.T) {
	const F = `{"role":"system","content":"FEEDS <&>"}`
	cases := []struct{ name, in, want string }{
		{"no-system",
			`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","messages":[` + F + `,{"role":"user","content":"hi"}]}`},
		{"after-system",
			`{"messages":[{"role":"system","content":"You are X."},{"role":"user","content":"hi"}],"stream":true}`,
			`{"messages":[{"role":"system","content":"You are X."},` + F + `,{"role":"user","content":"hi"}],"stream":true}`},
		{"after-system-and-developer, takes the last role",
			`{"messages":[{"role":"system","content":"a"},{"role":"developer","content":"b"},{"role":"user","content":"c"},{"role":"system","content":"late"}]}`,
			`{"messages":[{"role":"system","content":"a"},{"role":"developer","content":"b"},{"role":"developer","content":"FEEDS <&>"},{"role":"user","content":"c"},{"role":"system","content":"late"}]}`},
		{"system-only",
			`{"messages":[{"content":[{"type":"text","text":"sys"}],"role":"system","name":"n"}]}`,
			`{"messages":[{"content":[{"type":"text","text":"sys"}],"role":"system","name":"n"},` + F + `]}`},
		{"empty-messages",
			`{"messages":[]}`,
			`{"messages":[` + F + `]}`},
		{"whitespace kept",
			"{\n  \"messages\" : [\n    {\"role\": \"system\", \"content\": \"s\"} ,\n    {\"role\": \"user\", \"content\": \"u\"}\n  ],\n  \"n\": 1\n}",
			"{\n  \"messages\" : [\n    {\"role\": \"system\", \"content\": \"s\"}," + F + " ,\n    {\"role\": \"user\", \"content\": \"u\"}\n  ],\n  \"n\": 1\n}"},
		{"escaped key and role",
			`{"m\u0065ssages":[{"r\u006fle":"syst\u0065m","content":"s"}]}`,
			`{"m\u0065ssages":[{"r\u006fle":"syst\u0065m","content":"s"},` + F + `]}`},
		{"duplicate key: the last counts",
			`{"messages":[{"role":"user","content":"ignored"}],"messages":[{"role":"user","content":"used"}]}`,
			`{"messages":[{"role":"user","content":"ignored"}],"messages":[` + F + `,{"role":"user","content":"used"}]}`},
		{"unknown fields and strings with brackets",
			`{"x":{"y":"]}\"["},"messages":[{"role":"user","content":"{[\"]}"}],"z":[{}]}`,
			`{"x":{"y":"]}\"["},"messages":[` + F + `,{"role":"user","content":"{[\"]}"}],"z":[{}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := inject(injectorOf(formatOpenAI), []byte(c.in), "FEEDS <&>", false)
			if !ok {
				t.Fatal("not decorated")
			}
			if string(got) != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestInjectAnthropic(t *testing.T) {
	const B = `{"type":"text","text":"FEEDS"}`
	cases := []struct{ name, in, want string }{
		{"absent",
			`{"model":"m","messages":[]}`,
			`{"system":"FEEDS","model":"m","messages":[]}`},
		{"absent, empty object",
			`{}`,
			`{"system":"FEEDS"}`},
		{"null",
			`{"system":null,"messages":[]}`,
			`{"system":"FEEDS","messages":[]}`},
		{"blank string",
			`{"system":"  ","messages":[]}`,
			`{"system":"FEEDS","messages":[]}`},
		{"string becomes blocks, runner text byte for byte",
			`{"system":"You are X.\u00e9\n","messages":[]}`,
			`{"system":[{"type":"text","text":"You are X.\u00e9\n"},` + B + `],"messages":[]}`},
		{"blocks: appended after cache_control",
			`{"system":[{"type":"text","text":"long stable prompt","cache_control":{"type":"ephemeral"}}],"messages":[]}`,
			`{"system":[{"type":"text","text":"long stable prompt","cache_control":{"type":"ephemeral"}},` + B + `],"messages":[]}`},
		{"several blocks, whitespace kept",
			"{\"system\": [ {\"type\":\"text\",\"text\":\"a\"} , {\"type\":\"text\",\"text\":\"b\",\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}} ] }",
			"{\"system\": [ {\"type\":\"text\",\"text\":\"a\"} , {\"type\":\"text\",\"text\":\"b\",\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}}," + B + " ] }"},
		{"empty array",
			`{"system":[],"messages":[]}`,
			`{"system":[` + B + `],"messages":[]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := inject(injectorOf(formatAnthropic), []byte(c.in), "FEEDS", false)
			if !ok {
				t.Fatal("not decorated")
			}
			if string(got) != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
	for _, in := range []string{`{"system":42}`, `{"system":{"a":1}}`, `{"system":true}`, `[]`, `"s"`, `{`} {
		if got, ok := inject(injectorOf(formatAnthropic), []byte(in), "F", false); ok {
			t.Errorf("%s: decorated to %s", in, got)
		}
	}
}

// checkInjection asserts the fuzz invariants: valid JSON in, valid JSON out;
// every top-level member but the one decorated is unchanged; the runner's
// messages or system content is kept in order; the text is present once.
func checkInjection(t *testing.T, f exchange.Format, in, out []byte, text string) {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("invalid JSON out:\n%s\nfrom:\n%s", out, in)
	}
	var a, b map[string]json.RawMessage
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatalf("input: %v", err)
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("output: %v", err)
	}
	key := "messages"
	if f == formatAnthropic {
		key = "system"
	}
	for k, v := range a {
		if k != key && !bytes.Equal(v, b[k]) {
			t.Fatalf("%s changed: %s -> %s", k, v, b[k])
		}
	}
	if len(b) != len(a) && !(f == formatAnthropic && a[key] == nil && len(b) == len(a)+1) {
		t.Fatalf("members %d -> %d", len(a), len(b))
	}
	if f == formatOpenAI {
		var before, after []json.RawMessage
		if json.Unmarshal(a[key], &before) != nil || json.Unmarshal(b[key], &after) != nil {
			t.Fatalf("messages not arrays: %s -> %s", a[key], b[key])
		}
		if len(after) != len(before)+1 {
			t.Fatalf("messages %d -> %d", len(before), len(after))
		}
		for i, m := range after {
			var msg map[string]any
			_ = json.Unmarshal(m, &msg)
			if len(msg) != 2 || msg["content"] != text || (msg["role"] != "system" && msg["role"] != "developer") {
				continue
			}
			rest := append(append([]json.RawMessage{}, after[:i]...), after[i+1:]...)
			if reflect.DeepEqual(rest, before) {
				return
			}
		}
		t.Fatalf("feed message not inserted, or runner messages changed:\n%s\n->\n%s", a[key], b[key])
	}
	var sys any
	if err := json.Unmarshal(b[key], &sys); err != nil {
		t.Fatal(err)
	}
	switch s := sys.(type) {
	case string:
		if s != text {
			t.Fatalf("system string %q", s)
		}
	case []any:
		last, _ := s[len(s)-1].(map[string]any)
		if last["type"] != "text" || last["text"] != text || len(last) != 2 {
			t.Fatalf("last system block %v", last)
		}
		var before any
		_ = json.Unmarshal(a[key], &before)
		switch o := before.(type) {
		case string:
			if len(s) != 2 || !reflect.DeepEqual(s[0], map[string]any{"type": "text", "text": o}) {
				t.Fatalf("runner system string not kept as first block: %v", s)
			}
		case []any:
			if !reflect.DeepEqual(s[:len(s)-1], o) {
				t.Fatalf("runner blocks changed: %v -> %v", o, s)
			}
		default:
			t.Fatalf("system %v became blocks", before)
		}
	default:
		t.Fatalf("system is %T", sys)
	}
}

func FuzzInjectOpenAI(f *testing.F) {
	f.Add([]byte(requestBody(formatOpenAI)), "feeds")
	f.Add([]byte(`{"messages":[]}`), "")
	f.Add([]byte(`{"messages":[{"role":"developer","content":"d"},1,null,"x"]}`), "a\"b\\c\u2028<>")
	f.Add([]byte(" {\"messages\" :\t[ {\"role\":\"system\"} ] , \"messages\":[{\"role\":\"user\"}]}\n"), "\x00\xff")
	f.Add([]byte(`{"m\u0065ssages":[{"role":"s\u0079stem","content":"x"}],"k":[{"a":"]}"}]}`), "t")
	f.Fuzz(func(t *testing.T, body []byte, text string) {
		out, ok := inject(injectorOf(formatOpenAI), body, text, false)
		if !ok {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("decorated invalid JSON %q", body)
		}
		checkInjection(t, formatOpenAI, body, out, toValidText(text))
	})
}

func FuzzInjectAnthropic(f *testing.F) {
	f.Add([]byte(requestBody(formatAnthropic)), "feeds")
	f.Add([]byte(`{}`), "x")
	f.Add([]byte(`{"system":null}`), "x")
	f.Add([]byte(`{"system":" \n"}`), "x")
	f.Add([]byte(`{"system":[]}`), "x")
	f.Add([]byte(`{"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}],"system":"b"}`), "a\"b\\c<>")
	f.Add([]byte(`{"s\u0079stem":"esc\"aped"}`), "\xff")
	f.Fuzz(func(t *testing.T, body []byte, text string) {
		out, ok := inject(injectorOf(formatAnthropic), body, text, false)
		if !ok {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("decorated invalid JSON %q", body)
		}
		checkInjection(t, formatAnthropic, body, out, toValidText(text))
	})
}

// toValidText is text as it reads back from JSON: invalid UTF-8 becomes
// U+FFFD when encoded.
func toValidText(s string) string {
	var back string
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &back)
	return back
}
