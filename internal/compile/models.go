package compile

import (
	"fmt"
	"strings"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// modelAllowList is the agent's model allow-list for metadata.json: its
// x-claw.models, else the pod's x-claw.cllama-defaults.models, each entry
// normalised to "<provider>/<model>" (allowedModel).
func (b *builder) modelAllowList(svc *pod.Service) ([]string, error) {
	entries, key, service := svc.Claw.Models, "x-claw.models", svc.Name
	if len(entries) == 0 {
		entries, key, service = b.pod.Claw.CllamaDefaults.Models, "x-claw.cllama-defaults.models", ""
	}
	if len(entries) == 0 {
		return nil, nil
	}
	if !svc.Claw.CllamaEnabled() {
		if service == "" {
			return nil, nil // the pod default concerns cllama agents only
		}
		return nil, &pod.Error{File: b.pod.File, Service: service, Key: key, Problem: "a model allow-list needs the agent's model traffic to go through cllama", Fix: "add `cllama: passthrough`, or remove models"}
	}
	def := b.pod.Claw.CllamaDefaults.DefaultProvider
	out := make([]string, 0, len(entries))
	seen := map[string]bool{}
	for i, e := range entries {
		m, err := allowedModel(e, b.providerSet, def)
		if err != nil {
			return nil, &pod.Error{File: b.pod.File, Service: service, Key: fmt.Sprintf("%s[%d]", key, i), Problem: err.Error(),
				Fix: `write "<provider>/<model>" with a provider the pod configures (a <NAME>_API_KEY or <NAME>_BASE_URL in x-claw.cllama-defaults.env), or set x-claw.cllama-defaults.default-provider for bare names`}
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out, nil
}

// allowedModel normalises one allow-list entry as cllama routes it:
// "<provider>/<model>" with a configured provider keeps that provider
// (lower-cased); any other name, bare or with a prefix that is no
// provider, is the default provider's model ("<default>/<entry>").
// Without a default, such an entry is an error naming the providers.
func allowedModel(entry string, ps *manifest.Providers, defaultProvider string) (string, error) {
	prefix, rest, found := strings.Cut(entry, "/")
	if strings.TrimSpace(entry) == "" || (found && (prefix == "" || rest == "")) {
		return "", fmt.Errorf("%q is not a model name", entry)
	}
	if found {
		if _, ok := ps.Providers[strings.ToLower(prefix)]; ok {
			return strings.ToLower(prefix) + "/" + rest, nil
		}
	}
	if defaultProvider != "" {
		return defaultProvider + "/" + entry, nil
	}
	configured := strings.Join(ps.Names(), ", ")
	if configured == "" {
		configured = "none"
	}
	if found {
		return "", fmt.Errorf("%q names provider %q, which the pod does not configure (configured: %s)", entry, prefix, configured)
	}
	return "", fmt.Errorf("%q names no provider and the pod has no default provider (configured: %s)", entry, configured)
}
