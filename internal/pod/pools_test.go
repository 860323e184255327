package pod

import (
	"strings"
	"testing"
)

func TestProvidersAndFallbacksDecode(t *testing.T) {
	c, err := DecodePodClaw("claw-pod.yml", map[string]any{"cllama-defaults": map[string]any{
		"providers": map[string]any{"openai": map[string]any{"keys": []any{"sk-a", "sk-b"}, "base-url": "https://api.openai.com/v1"}},
		"fallbacks": map[string]any{"openai/gpt-4o": []any{"anthropic/claude-sonnet-4-5"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cd := c.CllamaDefaults
	if got := cd.Providers["openai"]; strings.Join(got.Keys, ",") != "sk-a,sk-b" || got.BaseURL != "https://api.openai.com/v1" {
		t.Fatalf("providers %+v", cd.Providers)
	}
	if got := cd.Fallbacks["openai/gpt-4o"]; len(got) != 1 || got[0] != "anthropic/claude-sonnet-4-5" {
		t.Fatalf("fallbacks %+v", cd.Fallbacks)
	}
}

func TestProvidersAndFallbacksErrors(t *testing.T) {
	cases := []struct {
		cd      map[string]any
		key     string
		problem string
	}{
		{map[string]any{"providers": map[string]any{"openai": map[string]any{"keys": []any{""}}}}, "x-claw.cllama-defaults.providers.openai.keys[0]", "empty"},
		{map[string]any{"providers": map[string]any{"openai": map[string]any{"keys": []any{"a", "a"}}}}, "x-claw.cllama-defaults.providers.openai.keys[1]", "same key"},
		{map[string]any{"providers": map[string]any{"openai": map[string]any{"key": []any{"a"}}}}, "x-claw.cllama-defaults.providers.openai.key", "unknown key"},
		{map[string]any{"providers": map[string]any{"openai": map[string]any{"base-url": "ftp://x"}}}, "x-claw.cllama-defaults.providers.openai.base-url", "not an http"},
		{map[string]any{"fallbacks": map[string]any{"gpt-4o": []any{"openai/gpt-4o"}}}, "x-claw.cllama-defaults.fallbacks.gpt-4o", "is not"},
		{map[string]any{"fallbacks": map[string]any{"openai/gpt-4o": []any{"openai/gpt-4o"}}}, "x-claw.cllama-defaults.fallbacks.openai/gpt-4o[0]", "itself"},
		{map[string]any{"fallbacks": map[string]any{"openai/gpt-4o": "anthropic/x"}}, "x-claw.cllama-defaults.fallbacks.openai/gpt-4o", "list"},
	}
	for _, c := range cases {
		_, err := DecodePodClaw("claw-pod.yml", map[string]any{"cllama-defaults": c.cd})
		if err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.problem) {
			t.Errorf("%v: %v, want an error at %s containing %q", c.cd, err, c.key, c.problem)
		}
	}
}
