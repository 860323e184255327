package compile

import (
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
)

var testProviders = &manifest.Providers{Providers: map[string]*manifest.Provider{"anthropic": {}, "openai": {}, "openrouter": {}}}

func TestAllowedModel(t *testing.T) {
	tests := []struct {
		entry, def, want, errLike string
	}{
		{"anthropic/claude-sonnet-4-5", "", "anthropic/claude-sonnet-4-5", ""},
		{"OpenAI/gpt-4o", "", "openai/gpt-4o", ""},
		{"openrouter/meta-llama/llama-3.3-70b", "", "openrouter/meta-llama/llama-3.3-70b", ""},
		{"gpt-4o", "openai", "openai/gpt-4o", ""},
		{"meta-llama/llama-3.3-70b", "openrouter", "openrouter/meta-llama/llama-3.3-70b", ""},
		{"gpt-4o", "", "", "no default provider (configured: anthropic, openai, openrouter)"},
		{"nope/m", "", "", `provider "nope"`},
		{"/m", "openai", "", "not a model name"},
		{"openai/", "openai", "", "not a model name"},
	}
	for _, tt := range tests {
		got, err := allowedModel(tt.entry, testProviders, tt.def)
		if tt.errLike != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errLike) {
				t.Errorf("%q: err %v, want containing %q", tt.entry, err, tt.errLike)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q (default %q): %q, %v; want %q", tt.entry, tt.def, got, err, tt.want)
		}
	}
}

// FuzzAllowedModel: whatever the entry, a normalised name is
// "<configured provider>/<non-empty model>" and keeps the entry's model.
func FuzzAllowedModel(f *testing.F) {
	for _, s := range []string{"anthropic/claude", "gpt-4o", "a/b/c", "/", "OPENAI/x", "openai//x"} {
		f.Add(s, "openai")
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, entry, def string) {
		if def != "" {
			def = "openrouter"
		}
		got, err := allowedModel(entry, testProviders, def)
		if err != nil {
			return
		}
		p, m, ok := strings.Cut(got, "/")
		if _, known := testProviders.Providers[p]; !ok || !known || m == "" {
			t.Fatalf("%q -> %q", entry, got)
		}
		if !strings.HasSuffix(entry, m) {
			t.Fatalf("%q -> %q lost the model name", entry, got)
		}
	})
}
