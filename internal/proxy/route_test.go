package proxy

import (
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire/formats"
)

// The routing rules of README "Routing", for both endpoints: index 0 is
// OpenAI chat completions, 1 Anthropic messages (registration order).
func TestModelRouter(t *testing.T) {
	const (
		chat     = 0
		messages = 1
	)
	withAnthropic := mustRegistry(`{"providers":{"openai":{"api_key":"k"},"anthropic":{"api_key":"k"},"openrouter":{"api_key":"k"},"local":{"base_url":"http://m/v1"}}}`)
	noAnthropic := mustRegistry(`{"providers":{"openai":{"api_key":"k"},"local":{"base_url":"http://m/v1"}}}`)
	all := formats.All()
	tests := []struct {
		name     string
		reg      *registry
		cfg      Config
		fi       int
		model    string
		provider string
		upstream string
		errLike  string
	}{
		{"prefixed", withAnthropic, Config{}, chat, "openai/gpt-4o", "openai", "gpt-4o", ""},
		{"prefix case folded", withAnthropic, Config{}, chat, "OpenAI/gpt-4o", "openai", "gpt-4o", ""},
		{"prefixed on messages", withAnthropic, Config{}, messages, "anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", ""},
		{"slashes kept after the prefix", withAnthropic, Config{}, chat, "openrouter/meta-llama/llama-3.3-70b", "openrouter", "meta-llama/llama-3.3-70b", ""},
		{"bare on messages goes to anthropic", withAnthropic, Config{}, messages, "claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", ""},
		{"bare on messages: anthropic wins over the default", withAnthropic, Config{DefaultProvider: "openai"}, messages, "claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6", ""},
		{"bare on messages: the pod names the anthropic-format provider", withAnthropic, Config{FormatProviders: map[string]string{"anthropic": "local"}}, messages, "claude-x", "local", "claude-x", ""},
		{"bare on messages without anthropic: default", noAnthropic, Config{DefaultProvider: "local"}, messages, "claude-x", "local", "claude-x", ""},
		{"bare on messages without any", noAnthropic, Config{}, messages, "claude-x", "", "", "CLLAMA_DEFAULT_PROVIDER"},
		{"bare on chat: default", withAnthropic, Config{DefaultProvider: "openai"}, chat, "gpt-4o", "openai", "gpt-4o", ""},
		{"bare on chat without default", withAnthropic, Config{}, chat, "gpt-4o", "", "", "known providers: anthropic, local, openai, openrouter"},
		{"bare on chat without default names the pod key", withAnthropic, Config{}, chat, "gpt-4o", "", "", "x-claw.cllama-defaults.default-provider"},
		{"unknown prefix to an aggregator default", withAnthropic, Config{DefaultProvider: "openrouter"}, chat, "meta-llama/llama-3.3-70b", "openrouter", "meta-llama/llama-3.3-70b", ""},
		{"unknown prefix, default not an aggregator", withAnthropic, Config{DefaultProvider: "openai"}, chat, "meta-llama/llama-3.3-70b", "", "", `unknown provider "meta-llama"`},
		{"unknown prefix, no default", withAnthropic, Config{}, chat, "nope/m", "", "", "known providers: anthropic, local, openai, openrouter"},
		{"empty prefix", withAnthropic, Config{DefaultProvider: "openrouter"}, chat, "/m", "", "", "<provider>/<model>"},
		{"empty model after prefix", withAnthropic, Config{DefaultProvider: "openrouter"}, chat, "openai/", "", "", "<provider>/<model>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, up, err := newModelRouter(tt.cfg, all).resolve(tt.reg, tt.fi, tt.model)
			if tt.errLike != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errLike) {
					t.Fatalf("err = %v, want containing %q", err, tt.errLike)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rt.Name != tt.provider || up != tt.upstream {
				t.Fatalf("got %s, %q; want %s, %q", rt.Name, up, tt.provider, tt.upstream)
			}
		})
	}
}
