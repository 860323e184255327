package compile

import (
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

func poolBuilder(cd pod.CllamaDefaults) *builder {
	return &builder{pod: &pod.Pod{File: "claw-pod.yml", Claw: pod.Claw{CllamaDefaults: cd}}}
}

// TestProviderPoolsCompile: x-claw.cllama-defaults.providers compiles
// into providers.json version 2 (keys by id, the base URL), which cllama
// parses, and the fallbacks with it.
func TestProviderPoolsCompile(t *testing.T) {
	b := poolBuilder(pod.CllamaDefaults{
		Env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-env"},
		Providers: map[string]pod.ProviderPool{
			"openai":    {Keys: []string{"sk-a", "sk-b"}},
			"anthropic": {Keys: []string{"sk-ant-1"}},
			"local":     {BaseURL: "http://model:8080/v1/"},
		},
		Fallbacks: map[string][]string{"OpenAI/gpt-4o": {"openrouter/openai/gpt-4o", "local/llama"}},
	})
	b.pod.Claw.CllamaDefaults.Env["OPENROUTER_API_KEY"] = "sk-or-x"
	ps, err := b.providers()
	if err != nil {
		t.Fatal(err)
	}
	data, err := manifest.MarshalIndentJSON(ps)
	if err != nil {
		t.Fatal(err)
	}
	back, err := manifest.ParseProviders(data)
	if err != nil {
		t.Fatalf("cllama cannot read what claw wrote: %v\n%s", err, data)
	}
	if back.Version != 2 {
		t.Fatalf("version %d", back.Version)
	}
	o := back.Providers["openai"]
	if o.BaseURL != "https://api.openai.com/v1" || len(o.UsableKeys()) != 2 || o.UsableKeys()[0].ID != "key-1" || o.UsableKeys()[1].Secret != "sk-b" {
		t.Fatalf("openai %+v", o)
	}
	a := back.Providers["anthropic"].UsableKeys()
	if len(a) != 2 || a[1].ID != "env" || a[1].Secret != "sk-ant-env" {
		t.Fatalf("anthropic keys %+v: the env key joins the pool", a)
	}
	if l := back.Providers["local"]; l.BaseURL != "http://model:8080/v1" || l.Auth != manifest.ProviderAuthNone {
		t.Fatalf("local %+v", l)
	}
	if got := strings.Join(back.Fallbacks["openai/gpt-4o"], ","); got != "openrouter/openai/gpt-4o,local/llama" {
		t.Fatalf("fallbacks %v", back.Fallbacks)
	}
}

// TestFallbackErrors: a target whose provider does not speak every
// format of the source's, or a provider the pod does not configure, is a
// compile error naming the entry.
func TestFallbackErrors(t *testing.T) {
	cases := []struct {
		fb           map[string][]string
		key, errLike string
		providers    map[string]pod.ProviderPool
	}{
		{map[string][]string{"anthropic/claude": {"openai/gpt-4o"}}, "x-claw.cllama-defaults.fallbacks.anthropic/claude[0]", "does not speak the anthropic format", nil},
		{map[string][]string{"openai/gpt-4o": {"deepseek/chat"}}, "x-claw.cllama-defaults.fallbacks.openai/gpt-4o[0]", "does not speak the responses format", nil},
		{map[string][]string{"openai/gpt-4o": {"mistral/large"}}, "x-claw.cllama-defaults.fallbacks.openai/gpt-4o[0]", `provider "mistral" is not configured`, nil},
		{map[string][]string{"groq/x": {"openai/gpt-4o"}}, "x-claw.cllama-defaults.fallbacks.groq/x", `provider "groq" is not configured`, nil},
		{nil, "x-claw.cllama-defaults.providers.custom.base-url", "base URL is required", map[string]pod.ProviderPool{"custom": {Keys: []string{"k"}}}},
	}
	for _, c := range cases {
		b := poolBuilder(pod.CllamaDefaults{
			Env:       map[string]string{"ANTHROPIC_API_KEY": "sk-ant-1", "OPENAI_API_KEY": "sk-1", "DEEPSEEK_API_KEY": "sk-d"},
			Fallbacks: c.fb, Providers: c.providers,
		})
		_, err := b.providers()
		pe, ok := err.(*pod.Error)
		if !ok || pe.Key != c.key || !strings.Contains(pe.Problem, c.errLike) || pe.Fix == "" {
			t.Errorf("%v: error %v, want at %s containing %q with a fix", c.fb, err, c.key, c.errLike)
		}
	}
}
