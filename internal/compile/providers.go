package compile

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// knownProvider is the built-in provider of that name (manifest's table,
// the one cllama routes by): its key is <NAME>_API_KEY and its base URL
// override <NAME>_BASE_URL (the same derivation cllama applies to its
// environment).
func knownProvider(name string) (manifest.BuiltinProvider, bool) { return manifest.Builtin(name) }

// providerKeyVars are the variables holding provider credentials: every
// known provider's <NAME>_API_KEY plus any <NAME>_API_KEY the pod gives
// cllama.
func (b *builder) providerKeyVars() map[string]string {
	vars := map[string]string{}
	for _, p := range manifest.BuiltinProviders {
		vars[strings.ToUpper(p.Name)+"_API_KEY"] = p.Name
	}
	vars["ANTHROPIC_AUTH_TOKEN"] = "anthropic"
	vars["GOOGLE_API_KEY"] = "google"
	for k := range b.pod.Claw.CllamaDefaults.Env {
		if name, ok := strings.CutSuffix(k, "_API_KEY"); ok && name != "" {
			vars[k] = strings.ToLower(name)
		}
	}
	return vars
}

// providers builds providers.json from cllama-defaults.env: a provider for
// every <NAME>_API_KEY of a known provider and every <NAME>_BASE_URL. A
// base URL without a key gives auth "none" (a local or scripted model).
func (b *builder) providers() (*manifest.Providers, error) {
	env := b.pod.Claw.CllamaDefaults.Env
	names := map[string]bool{}
	for k, v := range env {
		if v == "" {
			continue
		}
		if name, ok := strings.CutSuffix(k, "_BASE_URL"); ok && name != "" {
			names[strings.ToLower(name)] = true
		}
		if name, ok := strings.CutSuffix(k, "_API_KEY"); ok && name != "" {
			if _, known := knownProvider(strings.ToLower(name)); known {
				names[strings.ToLower(name)] = true
			}
		}
	}
	ps := &manifest.Providers{Providers: map[string]*manifest.Provider{}}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, name := range sorted {
		upper := strings.ToUpper(name)
		key, base := env[upper+"_API_KEY"], env[upper+"_BASE_URL"]
		p := &manifest.Provider{APIKey: key, Auth: manifest.ProviderAuthBearer}
		if kp, ok := knownProvider(name); ok {
			p.BaseURL, p.Auth = kp.BaseURL, kp.Auth
		}
		if base != "" {
			if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
				return nil, &pod.Error{File: b.pod.File, Key: "x-claw.cllama-defaults.env." + upper + "_BASE_URL", Problem: fmt.Sprintf("%q is not an http(s) URL", base), Fix: "write the provider's base URL, e.g. http://model:8080/v1"}
			}
			p.BaseURL = strings.TrimRight(base, "/")
		}
		if key == "" {
			p.Auth = manifest.ProviderAuthNone
		}
		ps.Providers[name] = p
	}
	return ps, nil
}

// checkDefaultProvider checks that x-claw.cllama-defaults.default-provider
// names a provider the pod configures: cllama refuses to start otherwise.
func (b *builder) checkDefaultProvider(ps *manifest.Providers) error {
	name := b.pod.Claw.CllamaDefaults.DefaultProvider
	if name == "" {
		return nil
	}
	if _, ok := ps.Providers[name]; ok {
		return nil
	}
	configured := strings.Join(ps.Names(), ", ")
	if configured == "" {
		configured = "none"
	}
	return &pod.Error{File: b.pod.File, Key: "x-claw.cllama-defaults.default-provider",
		Problem: fmt.Sprintf("%q is not a provider the pod configures (configured: %s)", name, configured),
		Fix:     fmt.Sprintf("name a configured provider, or configure %s with %s_API_KEY (or %s_BASE_URL) in x-claw.cllama-defaults.env", name, envName(name), envName(name))}
}

// envName is a provider's environment variable prefix.
func envName(provider string) string {
	return strings.ToUpper(strings.ReplaceAll(provider, "-", "_"))
}

// checkStarvation enforces credential starvation (ADR-007): no agent may
// hold a provider key in its own environment; only cllama sees them.
func (b *builder) checkStarvation() error {
	keys := b.providerKeyVars()
	secrets := b.providerSecrets()
	for _, svc := range b.pod.Agents() {
		for _, name := range sortedKeys(svc.Compose.Environment) {
			v := svc.Compose.Environment[name]
			if v == nil || *v == "" {
				continue
			}
			provider, ok := keys[name]
			if !ok {
				provider, ok = heldSecret(*v, secrets)
			}
			if ok {
				return &pod.Error{File: b.pod.File, Service: svc.Name, Key: "environment." + name, Problem: fmt.Sprintf("the agent holds the %s provider key; agents reach models only through cllama (credential starvation)", provider), Fix: fmt.Sprintf("move the key to x-claw.cllama-defaults.env and remove %s from the service's environment (and env_file)", name)}
			}
			if kind := keyShape(*v); kind != "" {
				b.warns = append(b.warns, fmt.Sprintf("%s: service %q: environment.%s looks like %s key; agents must not hold provider keys (they reach models only through cllama): move it to x-claw.cllama-defaults.env", b.pod.File, svc.Name, name, kind))
			}
		}
	}
	return nil
}

// keyShapes are the forms of well-known providers' API keys, most
// specific first.
var keyShapes = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"an Anthropic", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`)},
	{"an OpenRouter", regexp.MustCompile(`\bsk-or-[A-Za-z0-9_-]{20,}`)},
	{"an OpenAI", regexp.MustCompile(`\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`)},
	{"a Groq", regexp.MustCompile(`\bgsk_[A-Za-z0-9]{20,}`)},
	{"an xAI", regexp.MustCompile(`\bxai-[A-Za-z0-9]{20,}`)},
	{"a Google", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
}

// keyShape names the provider whose key v looks like (or holds), or "".
func keyShape(v string) string {
	for _, s := range keyShapes {
		if s.re.MatchString(v) {
			return s.kind
		}
	}
	return ""
}

// heldSecret reports which provider's key v holds: the key itself or the
// key inside a longer value (a header, a URL, a connection string).
func heldSecret(v string, secrets map[string]string) (string, bool) {
	if p, ok := secrets[v]; ok {
		return p, true
	}
	for _, key := range sortedKeys(secrets) {
		if strings.Contains(v, key) {
			return secrets[key], true
		}
	}
	return "", false
}

// providerSecrets are the provider keys given to cllama, by value, to catch
// a key copied under another name or embedded in another value.
func (b *builder) providerSecrets() map[string]string {
	keys := b.providerKeyVars()
	secrets := map[string]string{}
	for k, v := range b.pod.Claw.CllamaDefaults.Env {
		if provider, ok := keys[k]; ok && len(v) >= 8 {
			secrets[v] = provider
		}
	}
	return secrets
}
