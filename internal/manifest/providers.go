package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Provider auth styles.
const (
	ProviderAuthBearer  = "bearer"
	ProviderAuthXAPIKey = "x-api-key"
	ProviderAuthNone    = "none"
)

// Providers is <auth>/providers.json. Version 1 holds one api_key per
// provider; version 2 holds a key pool per provider with an active key.
type Providers struct {
	Version   int                  `json:"version,omitempty"`
	Providers map[string]*Provider `json:"providers"`
}

// Provider is one upstream model provider.
type Provider struct {
	BaseURL string `json:"base_url"`
	APIKey  string `json:"api_key,omitempty"`
	// Auth is bearer, x-api-key or none. Empty means the provider's default.
	Auth        string        `json:"auth,omitempty"`
	Keys        []ProviderKey `json:"keys,omitempty"`
	ActiveKeyID string        `json:"active_key_id,omitempty"`
	// Formats are the API formats the provider speaks (ProviderFormats),
	// in the order they are named to runners. Nil leaves it to cllama's
	// built-in table, which knows the well-known providers; a provider it
	// does not know is then sent every format.
	Formats []string `json:"formats,omitempty"`
}

// ProviderFormats are the API formats a provider may declare in "formats":
// the names cllama registers its formats under (internal/wire/formats,
// which checks that the two lists agree).
var ProviderFormats = []string{"openai", "anthropic", "responses"}

// ProviderKey is one key of a v2 pool.
type ProviderKey struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
	// State is "active" (or empty), "disabled" or "retired".
	State string `json:"state,omitempty"`
}

// Secret returns the key to use: in v2 the active_key_id when usable, else the
// first usable key of the pool; in v1 api_key.
func (p *Provider) Secret() string {
	usable := func(k ProviderKey) bool { return k.Secret != "" && (k.State == "" || k.State == "active") }
	if p.ActiveKeyID != "" {
		for _, k := range p.Keys {
			if k.ID == p.ActiveKeyID && usable(k) {
				return k.Secret
			}
		}
	}
	for _, k := range p.Keys {
		if usable(k) {
			return k.Secret
		}
	}
	return p.APIKey
}

// ParseProviders decodes and validates providers.json (v1 or v2).
func ParseProviders(data []byte) (*Providers, error) {
	var ps Providers
	if err := decodeOne(data, &ps); err != nil {
		return nil, fmt.Errorf("providers.json: %w", err)
	}
	if ps.Version != 0 && ps.Version != 1 && ps.Version != 2 {
		return nil, fmt.Errorf("providers.json: version: unsupported value %d (want 1 or 2)", ps.Version)
	}
	for _, name := range ps.Names() {
		p := ps.Providers[name]
		if p == nil {
			return nil, fmt.Errorf("providers.json: providers.%s: must be an object", name)
		}
		if p.BaseURL != "" && !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
			return nil, fmt.Errorf("providers.json: providers.%s.base_url: %q must be an http:// or https:// URL", name, p.BaseURL)
		}
		switch p.Auth {
		case "", ProviderAuthBearer, ProviderAuthXAPIKey, ProviderAuthNone:
		default:
			return nil, fmt.Errorf("providers.json: providers.%s.auth: %q must be bearer, x-api-key or none", name, p.Auth)
		}
		for i, k := range p.Keys {
			if k.ID == "" {
				return nil, fmt.Errorf("providers.json: providers.%s.keys[%d].id: required", name, i)
			}
		}
		if err := checkFormats(name, p.Formats); err != nil {
			return nil, err
		}
		if p.ActiveKeyID != "" {
			found := false
			for _, k := range p.Keys {
				found = found || k.ID == p.ActiveKeyID
			}
			if !found {
				return nil, fmt.Errorf("providers.json: providers.%s.active_key_id: %q is not in keys", name, p.ActiveKeyID)
			}
		}
	}
	return &ps, nil
}

// checkFormats validates a provider's "formats": present means at least
// one, each a known format, none twice.
func checkFormats(provider string, formats []string) error {
	valid := strings.Join(ProviderFormats, ", ")
	if formats != nil && len(formats) == 0 {
		return fmt.Errorf("providers.json: providers.%s.formats: empty; list the API formats the provider speaks (%s), or leave the key out", provider, valid)
	}
	for i, f := range formats {
		if !slices.Contains(ProviderFormats, f) {
			return fmt.Errorf("providers.json: providers.%s.formats[%d]: %q is not an API format cllama speaks; valid: %s", provider, i, f, valid)
		}
		if slices.Contains(formats[:i], f) {
			return fmt.Errorf("providers.json: providers.%s.formats[%d]: %q is listed twice", provider, i, f)
		}
	}
	return nil
}

// Names returns the provider names, sorted.
func (ps *Providers) Names() []string {
	names := make([]string, 0, len(ps.Providers))
	for n := range ps.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// MarshalIndentJSON encodes v as indented JSON with a trailing newline, the
// byte form claw writes for every manifest (deterministic for a given value).
func MarshalIndentJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
