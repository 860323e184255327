package proxy

import (
	"slices"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire/formats"
)

// What the built-in providers are known to speak.
func TestBuiltinProvidersFormats(t *testing.T) {
	want := map[string][]string{
		"openai":     {"openai", "responses"},
		"anthropic":  {"anthropic", "openai"},
		"openrouter": {"openai", "responses", "anthropic"},
		"xai":        {"openai", "responses", "anthropic"},
		"groq":       {"openai", "responses"},
		"fireworks":  {"openai", "responses"},
		"gemini":     {"openai"},
		"google":     {"openai"},
		"mistral":    {"openai"},
		"deepseek":   {"openai"},
		"together":   {"openai"},
		"cerebras":   {"openai"},
	}
	if len(want) != len(manifest.BuiltinProviders) {
		t.Fatalf("%d built-in providers, %d checked", len(manifest.BuiltinProviders), len(want))
	}
	for _, b := range manifest.BuiltinProviders {
		name := b.Name
		if !slices.Equal(b.Formats, want[name]) {
			t.Errorf("%s speaks %q, want %q", name, b.Formats, want[name])
		}
		for _, f := range b.Formats {
			if _, err := formats.Lookup(exchange.Format(f)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// providers.json "formats" replaces the built-in list; a provider known to
// neither is not checked.
func TestRegistryFormats(t *testing.T) {
	ps, err := manifest.ParseProviders([]byte(`{"providers":{
		"anthropic":{"api_key":"k"},
		"openai":{"api_key":"k","formats":["openai"]},
		"gw":{"base_url":"http://gw/v1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := buildRegistry(ps, nil, formats.All(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{"anthropic": {"anthropic", "openai"}, "openai": {"openai"}, "gw": nil} {
		if got := reg.routes[name].Formats; !slices.Equal(got, want) || (want == nil) != (got == nil) {
			t.Errorf("%s formats %q, want %q", name, got, want)
		}
	}
}

// A request whose format its provider does not speak is refused before any
// upstream call, in the endpoint's shape, naming what the provider speaks.
func TestFormatNotSpokenIsRefused(t *testing.T) {
	p := newPodWith(t, `{"providers":{
		"anthropic":{"base_url":"{UP}/v1","api_key":"k"},
		"gw":{"base_url":"{UP}/v1","api_key":"k","formats":["responses"]},
		"wide":{"base_url":"{UP}/v1","api_key":"k","formats":["anthropic","openai","responses"]}}}`)
	for _, c := range []struct {
		path, model string
		f           string
		want        string
	}{
		{pathResponses, "anthropic/claude-x", "responses",
			"provider anthropic does not speak POST /v1/responses; it speaks POST /v1/messages, POST /v1/chat/completions"},
		{pathChat, "gw/m", "openai", "provider gw does not speak POST /v1/chat/completions; it speaks POST /v1/responses"},
		{pathMessages, "gw/m", "anthropic", "provider gw does not speak POST /v1/messages; it speaks POST /v1/responses"},
		{pathMessages + "/count_tokens", "gw/m", "anthropic", "provider gw does not speak POST /v1/messages/count_tokens; it speaks POST /v1/responses"},
	} {
		resp := p.post(t, c.path, `{"model":"`+c.model+`","max_tokens":8,"input":"hi","messages":[]}`)
		body := readAll(t, resp.Body)
		if resp.StatusCode != 400 {
			t.Fatalf("%s %s: status %d %s", c.path, c.model, resp.StatusCode, body)
		}
		typ, msg := apiErr(t, exchange.Format(c.f), body)
		if msg != c.want || typ != "invalid_request_error" {
			t.Errorf("%s %s: %s %q\nwant %q", c.path, c.model, typ, msg, c.want)
		}
		if n := len(p.up.requests()); n != 0 {
			t.Fatalf("a refused request reached the provider (%d calls)", n)
		}
		var found bool
		for _, e := range p.audit.events(t) {
			found = found || (e.Type == audit.TypeError && e.Error == c.want && e.Format == c.f && e.ClawID == "alice" && e.StatusCode == 400)
		}
		if !found {
			t.Errorf("no audit error event for %q in %v", c.want, p.audit.events(t))
		}
	}
	// What a provider speaks goes through.
	for _, c := range []struct{ path, model string }{
		{pathChat, "anthropic/claude-x"}, {pathResponses, "gw/m"}, {pathResponses, "wide/m"}, {pathChat, "wide/m"},
	} {
		resp := p.post(t, c.path, `{"model":"`+c.model+`","input":"hi","messages":[]}`)
		if body := readAll(t, resp.Body); resp.StatusCode != 200 {
			t.Errorf("%s %s: %d %s", c.path, c.model, resp.StatusCode, strings.TrimSpace(body))
		}
	}
}
