package compile

import (
	"fmt"
	"strings"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// KnownProvider is a model provider claw recognises by its key variable.
type KnownProvider struct {
	Name    string
	KeyEnv  string
	BaseURL string
	Auth    string
}

// KnownProviders maps provider key variables (and <NAME>_BASE_URL
// overrides) in x-claw.cllama-defaults.env to providers.json entries.
var KnownProviders = []KnownProvider{
	{"anthropic", "ANTHROPIC_API_KEY", "https://api.anthropic.com/v1", manifest.ProviderAuthXAPIKey},
	{"deepseek", "DEEPSEEK_API_KEY", "https://api.deepseek.com/v1", manifest.ProviderAuthBearer},
	{"google", "GEMINI_API_KEY", "https://generativelanguage.googleapis.com/v1beta/openai", manifest.ProviderAuthBearer},
	{"groq", "GROQ_API_KEY", "https://api.groq.com/openai/v1", manifest.ProviderAuthBearer},
	{"mistral", "MISTRAL_API_KEY", "https://api.mistral.ai/v1", manifest.ProviderAuthBearer},
	{"openai", "OPENAI_API_KEY", "https://api.openai.com/v1", manifest.ProviderAuthBearer},
	{"openrouter", "OPENROUTER_API_KEY", "https://openrouter.ai/api/v1", manifest.ProviderAuthBearer},
	{"xai", "XAI_API_KEY", "https://api.x.ai/v1", manifest.ProviderAuthBearer},
}

// providerKeyVars are variables that hold provider credentials; finding one
// in an agent's environment breaks credential starvation (ADR-007).
func isProviderKey(name string) (provider string, ok bool) {
	for _, p := range KnownProviders {
		if name == p.KeyEnv {
			return p.Name, true
		}
	}
	if name == "GOOGLE_API_KEY" {
		return "google", true
	}
	return "", false
}

// providers builds providers.json from cllama-defaults.env: every provider
// whose key (or <NAME>_BASE_URL) is set. A base URL without a key gives a
// provider with auth "none" (a local or scripted model server).
func (b *builder) providers() (*manifest.Providers, error) {
	env := b.pod.Claw.CllamaDefaults.Env
	ps := &manifest.Providers{Providers: map[string]*manifest.Provider{}}
	for _, kp := range KnownProviders {
		key := env[kp.KeyEnv]
		if key == "" && kp.Name == "google" {
			key = env["GOOGLE_API_KEY"]
		}
		baseEnv := strings.ToUpper(kp.Name) + "_BASE_URL"
		base := env[baseEnv]
		if key == "" && base == "" {
			continue
		}
		p := &manifest.Provider{BaseURL: kp.BaseURL, APIKey: key, Auth: kp.Auth}
		if base != "" {
			if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
				return nil, &pod.Error{File: b.pod.File, Key: "x-claw.cllama-defaults.env." + baseEnv, Problem: fmt.Sprintf("%q is not an http(s) URL", base), Fix: "write the provider's base URL, e.g. http://modelsim:8080/v1"}
			}
			p.BaseURL = strings.TrimRight(base, "/")
		}
		if key == "" {
			p.Auth = manifest.ProviderAuthNone
		}
		ps.Providers[kp.Name] = p
	}
	return ps, nil
}

// checkStarvation enforces credential starvation: no agent may hold a
// provider key in its own environment; only cllama sees them.
func (b *builder) checkStarvation() error {
	for _, svc := range b.pod.Agents() {
		for _, name := range sortedKeys(svc.Compose.Environment) {
			if v := svc.Compose.Environment[name]; v == nil || *v == "" {
				continue
			}
			if provider, ok := isProviderKey(name); ok {
				return &pod.Error{File: b.pod.File, Service: svc.Name, Key: "environment." + name, Problem: fmt.Sprintf("the agent holds a %s provider key; agents must reach models only through cllama (credential starvation)", provider), Fix: fmt.Sprintf("move %s to x-claw.cllama-defaults.env and remove it from the service's environment (and env_file)", name)}
			}
		}
	}
	return nil
}
