package proxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/formats"
)

func TestScanRequest(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		model   string
		stream  bool
		errLike string
	}{
		{"simple", `{"model":"openai/gpt-4o","messages":[]}`, "openai/gpt-4o", false, ""},
		{"stream true", `{"stream":true,"model":"anthropic/claude"}`, "anthropic/claude", true, ""},
		{"stream null", `{"stream":null,"model":"a/b"}`, "a/b", false, ""},
		{"nested model ignored", `{"metadata":{"model":"x/y"},"model":"p/m","tools":[{"model":"q/z"}]}`, "p/m", false, ""},
		{"escaped key", `{"mod\u0065l":"p/m"}`, "p/m", false, ""},
		{"escaped value", `{"model":"p\/m\u00e9"}`, "p/mé", false, ""},
		{"whitespace", " {\n \"model\" : \"p/m\" ,\n\"stream\" :\ttrue }\n", "p/m", true, ""},
		{"bare model", `{"model":"gpt-4o"}`, "gpt-4o", false, ""},
		{"invalid json", `{"model":"p/m"`, "", false, "not valid JSON"},
		{"not object", `["model"]`, "", false, "must be a JSON object"},
		{"missing model", `{"messages":[]}`, "", false, `"model" is required`},
		{"empty model", `{"model":""}`, "", false, `"model" is required`},
		{"model not string", `{"model":5}`, "", false, `"model" must be a string`},
		{"duplicate model", `{"model":"a/b","model":"c/d"}`, "", false, "more than one"},
		{"duplicate stream", `{"model":"a/b","stream":false,"stream":true}`, "", false, "more than one"},
		{"stream string", `{"model":"a/b","stream":"yes"}`, "", false, `"stream" must be true or false`},
		{"model in capitals", `{"model":"a/b","MODEL":"c/d"}`, "", false, `"MODEL" is "model" spelled in another case`},
		{"model capitalised alone", `{"Model":"a/b"}`, "", false, `"Model" is "model" spelled in another case`},
		{"stream with a long s", `{"model":"a/b","ſtream":true}`, "", false, `"stream" spelled in another case`},
		{"escaped capital", `{"model":"a/b","Model":"c/d"}`, "", false, `"Model" is "model"`},
		{"role in capitals", `{"model":"a/b","messages":[{"role":"user","ROLE":"system","content":"x"}]}`, "", false, `in messages[0]`},
		{"tool call name twice", `{"model":"a/b","messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"a","name":"b"}}]}]}`, "", false, `more than one "name" member in messages[0].tool_calls[0].function`},
		{"ungoverned case variants pass", `{"model":"a/b","Temperature":1,"metadata":{"MODEL":"x"}}`, "a/b", false, ""},
		{"empty body", ``, "", false, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := scanRequest([]byte(tt.body), chatShape)
			if tt.errLike != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errLike) {
					t.Fatalf("err = %v, want containing %q", err, tt.errLike)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.Model != tt.model || info.Stream != tt.stream {
				t.Fatalf("got %+v", info)
			}
		})
	}
}

func TestRewriteModelKeepsOtherBytes(t *testing.T) {
	body := []byte("{ \"temperature\" : 0.50,\n  \"model\":\"openai/gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"\u00e9\\u00e9 model\"}]}")
	info, err := scanRequest(body, chatShape)
	if err != nil {
		t.Fatal(err)
	}
	info.Upstream = "gpt-4o"
	out := rewriteModel(body, info)
	want := bytes.Replace(body, []byte(`"openai/gpt-4o"`), []byte(`"gpt-4o"`), 1)
	if !bytes.Equal(out, want) {
		t.Fatalf("rewrite:\n%s\nwant\n%s", out, want)
	}
	if !bytes.Contains(body, []byte("openai/gpt-4o")) {
		t.Fatal("rewrite mutated its input")
	}
}

// A passthrough body leaves as three slices of the runner's own bytes (no
// copy); a body the decorator rewrote has its model found again, and one
// that lost it is an error rather than a request for the wrong model.
func TestUpstreamBodySlicesAndDecoratedBodies(t *testing.T) {
	body := []byte(`{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	info, err := scanRequest(body, chatShape)
	if err != nil {
		t.Fatal(err)
	}
	info.Upstream = "gpt-4o"
	want := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	parts, err := upstreamBody(body, body, info)
	if err != nil || string(bytes.Join(parts, nil)) != want {
		t.Fatalf("undecorated: %q, %v", parts, err)
	}
	if &parts[2][0] != &body[info.modelEnd] {
		t.Fatal("the body after the model was copied, not sliced")
	}
	decorated := []byte(`{"messages":[{"role":"system","content":"FEED"},{"role":"user","content":"hi"}],"model":"openai/gpt-4o"}`)
	parts, err = upstreamBody(decorated, body, info)
	if err != nil || string(bytes.Join(parts, nil)) != `{"messages":[{"role":"system","content":"FEED"},{"role":"user","content":"hi"}],"model":"gpt-4o"}` {
		t.Fatalf("decorated: %q, %v", parts, err)
	}
	for _, lost := range []string{`{"messages":[]}`, `{"model":"other/m"}`, `{"model":7}`} {
		if _, err := upstreamBody([]byte(lost), body, info); err == nil {
			t.Fatalf("%s: no error", lost)
		}
	}
}

// FuzzScanRequest checks the hand-written scanner against encoding/json:
// whenever scanning succeeds, the document's top-level model and stream
// agree with a full decode, and the rewrite is valid JSON whose only change
// is the model.
func FuzzScanRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"openai/gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		`{"a":{"model":"x/y"},"model":"p/m"}`,
		`{"mod\u0065l":"p\/q","stream":null}`,
		` {"model" : "a/b/c" , "x":[1,2,{"y":"}"}]} `,
		`{"model":"a/b","model":"c/d"}`,
		`{"model":"a/b","MODEL":"c/d"}`,
		`{"model":"a/b","Stream":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		info, err := scanRequest(body, chatShape)
		if err != nil {
			return
		}
		rt, upModel, err := fuzzRouter.resolve(fuzzRegistry, 1, info.Model)
		if err != nil {
			return
		}
		info.Provider, info.Upstream = rt.Name, upModel
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("scanner accepted what encoding/json rejects: %v", err)
		}
		var model string
		if err := json.Unmarshal(doc["model"], &model); err != nil || model != info.Model {
			t.Fatalf("model %q, encoding/json says %q (%v)", info.Model, model, err)
		}
		// A case-insensitive decoder (encoding/json into a struct, as
		// providers written in Go read a request) reads the same model.
		var ci struct {
			Model  string `json:"model"`
			Stream *bool  `json:"stream"`
		}
		if err := json.Unmarshal(body, &ci); err == nil && ci.Model != info.Model {
			t.Fatalf("model %q, a case-insensitive decoder says %q", info.Model, ci.Model)
		}
		if ci.Stream != nil && *ci.Stream != info.Stream {
			t.Fatalf("stream %v, a case-insensitive decoder says %v", info.Stream, *ci.Stream)
		}
		var stream *bool
		if raw, ok := doc["stream"]; ok {
			_ = json.Unmarshal(raw, &stream)
		}
		if (stream != nil && *stream) != info.Stream {
			t.Fatalf("stream %v, encoding/json says %v", info.Stream, stream)
		}
		out := rewriteModel(body, info)
		var doc2 map[string]json.RawMessage
		if err := json.Unmarshal(out, &doc2); err != nil {
			t.Fatalf("rewrite produced invalid JSON: %v\n%s", err, out)
		}
		var up string
		_ = json.Unmarshal(doc2["model"], &up)
		if up != info.Upstream {
			t.Fatalf("rewritten model %q, want %q", up, info.Upstream)
		}
		if len(doc2) != len(doc) {
			t.Fatalf("rewrite changed the member count")
		}
	})
}

var (
	chatShape    = mustFormat("openai").Governed()
	fuzzRegistry = mustRegistry(`{"providers":{"openai":{"api_key":"k"},"anthropic":{"api_key":"k"},"openrouter":{"api_key":"k"},"p":{"base_url":"http://p/v1"}}}`)
	fuzzRouter   = newModelRouter(Config{DefaultProvider: "openrouter"}, formats.All())
)

func mustFormat(name string) wire.Format {
	f, err := formats.Lookup(exchange.Format(name))
	if err != nil {
		panic(err)
	}
	return f
}

func mustRegistry(providers string) *registry {
	ps, err := manifest.ParseProviders([]byte(providers))
	if err != nil {
		panic(err)
	}
	reg, err := buildRegistry(ps, nil, formats.All(), nil, "")
	if err != nil {
		panic(err)
	}
	return reg
}

// rewriteModel is upstreamBody's slices joined: the body the provider gets.
func rewriteModel(body []byte, info requestInfo) []byte {
	parts, _ := upstreamBody(body, body, info)
	return slices.Concat(parts...)
}
