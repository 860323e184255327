package proxy

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/filewatch"
	"github.com/clawdapus/clawgo/internal/keypool"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// Route is one resolved provider: where to send and how to authenticate.
type Route struct {
	Name    string
	BaseURL string // without a trailing slash, normally ending in /v1
	Auth    string // bearer, x-api-key or none
	Secret  string
	// Aggregator is set for providers whose model ids hold "/" (built-in
	// table): as the default provider, they take model names whose prefix
	// is no configured provider, whole.
	Aggregator bool
	// Formats are the API formats the provider speaks: providers.json
	// "formats", else the built-in table's. Nil means unknown: requests
	// of every format are sent.
	Formats []string

	// keys are the pool's keys, the active one first (none without a
	// secret); pool keeps their state and the provider's circuit (nil:
	// keys are used as they come, no state).
	keys []routeKey
	pool *keypool.Provider

	// Built once per registry, not per request.
	urls      []string // upstream URL per format, indexed as Server.formats
	countURLs []string // token-counting URL per format ("" when it has none)
	authValue []string // the first key's Authorization or X-Api-Key header value
	// speaks tells, per format, whether the provider speaks it (all true
	// when Formats is nil); spoken lists its endpoints for messages.
	speaks []bool
	spoken string
}

// URL returns the upstream URL for an endpoint path below /v1
// (wire.Endpoint.Upstream): base URLs end in the API version, as
// providers.json writes them ("https://api.openai.com/v1").
func (r *Route) URL(endpoint string) string { return r.BaseURL + endpoint }

// finish precomputes what every request of the route needs.
func (r *Route) finish(formats []wire.Format) {
	r.urls = make([]string, len(formats))
	r.countURLs = make([]string, len(formats))
	r.speaks = make([]bool, len(formats))
	var spoken []string
	for _, name := range r.Formats {
		for i, f := range formats {
			if f.Name() == name {
				r.speaks[i] = true
				spoken = append(spoken, "POST "+f.Endpoint().Route)
			}
		}
	}
	r.spoken = strings.Join(spoken, ", ")
	for i, f := range formats {
		if r.Formats == nil {
			r.speaks[i] = true
		}
		r.urls[i] = r.URL(f.Endpoint().Upstream)
		if tc, ok := f.(wire.TokenCounter); ok {
			r.countURLs[i] = r.URL(tc.CountTokens().Upstream)
		}
	}
	for i := range r.keys {
		switch r.Auth {
		case manifest.ProviderAuthBearer:
			r.keys[i].authValue = []string{"Bearer " + r.keys[i].secret}
		case manifest.ProviderAuthXAPIKey:
			r.keys[i].authValue = []string{r.keys[i].secret}
		}
	}
	if len(r.keys) > 0 {
		r.authValue = r.keys[0].authValue
	}
}

// routeKey is one key of a route's pool.
type routeKey struct {
	id        string
	secret    string
	authValue []string
}

// keyAuth is the header value of key k (-1: the provider has none).
func (r *Route) keyAuth(k int) []string {
	if k < 0 || k >= len(r.keys) {
		return nil
	}
	return r.keys[k].authValue
}

// checkSpeaks refuses a request of format fi, on endpoint (its route),
// when the provider is known not to speak that format.
func (r *Route) checkSpeaks(fi int, endpoint string) error {
	if r.speaks[fi] {
		return nil
	}
	msg := fmt.Sprintf("provider %s does not speak POST %s", r.Name, endpoint)
	if r.spoken != "" {
		msg += "; it speaks " + r.spoken
	}
	return apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, msg)
}

// registry is an immutable set of routes.
type registry struct {
	routes map[string]*Route
	names  string // sorted names, for error messages
	// fallbacks are the chains, by "<provider>/<model>" (the provider's
	// name as routed, lower-case).
	fallbacks map[string][]fallbackTarget
}

// fallbackTarget is one step of a fallback chain.
type fallbackTarget struct {
	route *Route
	model string
	ref   string // "<provider>/<model>"
}

// buildRegistry merges providers.json (ps, may be nil) with the environment
// and the built-in defaults. Precedence: base URL from <NAME>_BASE_URL, then
// providers.json, then the built-in table; key from providers.json (v2
// active key, else v1 api_key), then <NAME>_API_KEY; auth from
// providers.json, then the built-in table, then bearer when there is a key
// and none without one.
// With pools, each route's keys are a pool of it in generation gen.
func buildRegistry(ps *manifest.Providers, env map[string]ProviderEnv, formats []wire.Format, pools *keypool.Pools, gen string) (*registry, error) {
	reg := &registry{routes: make(map[string]*Route)}
	add := func(name string, p *manifest.Provider) error {
		name = strings.ToLower(name)
		e := env[name]
		b, known := manifest.Builtin(name)
		rt := &Route{Name: name, Aggregator: b.Aggregator, Formats: b.Formats}
		switch {
		case e.BaseURL != "":
			rt.BaseURL = e.BaseURL
		case p != nil && p.BaseURL != "":
			rt.BaseURL = p.BaseURL
		case known:
			rt.BaseURL = b.BaseURL
		default:
			return fmt.Errorf("providers.json: providers.%s.base_url: required (no built-in default for %q); set it, or set %s_BASE_URL", name, name, envName(name))
		}
		if !strings.HasPrefix(rt.BaseURL, "http://") && !strings.HasPrefix(rt.BaseURL, "https://") {
			return fmt.Errorf("provider %s: base URL %q must be an http:// or https:// URL", name, rt.BaseURL)
		}
		rt.BaseURL = strings.TrimRight(rt.BaseURL, "/")
		if p != nil {
			rt.Secret = p.Secret()
			rt.Auth = p.Auth
			if p.Formats != nil {
				rt.Formats = p.Formats
			}
			for _, k := range p.UsableKeys() {
				rt.keys = append(rt.keys, routeKey{id: k.ID, secret: k.Secret})
			}
		}
		if rt.Secret == "" && e.APIKey != "" {
			rt.Secret = e.APIKey
			rt.keys = []routeKey{{id: "env", secret: e.APIKey}}
		}
		if rt.Auth == "" && known {
			rt.Auth = b.Auth
		}
		if rt.Auth == "" {
			rt.Auth = manifest.ProviderAuthBearer
		}
		if rt.Secret == "" {
			rt.Auth = manifest.ProviderAuthNone
			rt.keys = nil
		}
		if len(rt.keys) > keypool.MaxKeys {
			return fmt.Errorf("providers.json: providers.%s.keys: %d usable keys (at most %d)", name, len(rt.keys), keypool.MaxKeys)
		}
		rt.finish(formats)
		if pools != nil {
			ks := make([]keypool.Key, len(rt.keys))
			for i, k := range rt.keys {
				ks[i] = keypool.Key{ID: k.id, Fingerprint: keypool.Fingerprint(k.secret)}
			}
			rt.pool = pools.Provider(name, ks, gen)
		}
		reg.routes[name] = rt
		return nil
	}
	if ps != nil {
		for _, name := range ps.Names() {
			if err := add(name, ps.Providers[name]); err != nil {
				return nil, err
			}
		}
	}
	// Environment-only providers: a key for a provider whose base URL is
	// known, or an explicit base URL.
	for name, e := range env {
		if _, done := reg.routes[name]; done {
			continue
		}
		if _, known := manifest.Builtin(name); (known && e.APIKey != "") || e.BaseURL != "" {
			if err := add(name, nil); err != nil {
				return nil, err
			}
		}
	}
	if ps != nil {
		var err error
		if reg.fallbacks, err = buildFallbacks(ps.Fallbacks, reg, formats); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(reg.routes))
	for n := range reg.routes {
		names = append(names, n)
	}
	sort.Strings(names)
	reg.names = strings.Join(names, ", ")
	if reg.names == "" {
		reg.names = "(none configured)"
	}
	return reg, nil
}

// buildFallbacks resolves the fallback chains against the routes: every
// provider named must be configured, and a target must speak every
// format its source's provider speaks (no translation between formats).
func buildFallbacks(fb map[string][]string, reg *registry, formats []wire.Format) (map[string][]fallbackTarget, error) {
	if len(fb) == 0 {
		return nil, nil
	}
	out := make(map[string][]fallbackTarget, len(fb))
	for src, targets := range fb {
		sp, sm, _ := manifest.SplitModelRef(src)
		from := reg.routes[strings.ToLower(sp)]
		if from == nil {
			return nil, fmt.Errorf("providers.json: fallbacks: %q names provider %q, which is not configured", src, sp)
		}
		key := from.Name + "/" + sm
		for i, t := range targets {
			tp, tm, _ := manifest.SplitModelRef(t)
			to := reg.routes[strings.ToLower(tp)]
			if to == nil {
				return nil, fmt.Errorf("providers.json: fallbacks.%s[%d]: %q names provider %q, which is not configured", src, i, t, tp)
			}
			for fi, f := range formats {
				// A provider whose formats are unknown is taken at its word.
				if from.Formats != nil && to.Formats != nil && from.speaks[fi] && !to.speaks[fi] {
					return nil, fmt.Errorf("providers.json: fallbacks.%s[%d]: provider %s does not speak the %s format that %s speaks; choose a target that speaks every format of its source", src, i, to.Name, f.Name(), from.Name)
				}
			}
			out[key] = append(out[key], fallbackTarget{route: to, model: tm, ref: to.Name + "/" + tm})
		}
	}
	return out, nil
}

func envName(provider string) string {
	return strings.ToUpper(strings.ReplaceAll(provider, "-", "_"))
}

// providerSource keeps the registry current: providers.json is re-stat'ed at
// most once a second and reloaded when it changes, so rotating a v2 key pool
// needs no restart. A reload that fails keeps the previous registry.
type providerSource struct {
	path    string
	env     map[string]ProviderEnv
	formats []wire.Format
	onError func(error)
	pools   *keypool.Pools

	cur filewatch.Value[registry]
}

func newProviderSource(authDir string, env map[string]ProviderEnv, formats []wire.Format, pools *keypool.Pools, onError func(error)) (*providerSource, error) {
	s := &providerSource{path: filepath.Join(authDir, "providers.json"), env: env, formats: formats, onError: onError, pools: pools}
	reg, stamp, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cur.Set(reg, stamp, time.Now())
	return s, nil
}

func (s *providerSource) load() (*registry, string, error) {
	stamp := filewatch.Stamp(s.path)
	var ps *manifest.Providers
	raw, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Environment-only configuration is valid.
	case err != nil:
		return nil, stamp, fmt.Errorf("%s: %w", s.path, err)
	default:
		if ps, err = manifest.ParseProviders(raw); err != nil {
			return nil, stamp, fmt.Errorf("%s: %w", s.path, err)
		}
	}
	// Dead keys stay dead until the file changes: its bytes name the
	// generation.
	reg, err := buildRegistry(ps, s.env, s.formats, s.pools, keypool.Generation(raw))
	if err != nil {
		return nil, stamp, fmt.Errorf("%s: %w", s.path, err)
	}
	return reg, stamp, nil
}

// get returns the current registry, reloading it when the file changed.
func (s *providerSource) get(now time.Time) *registry {
	return s.cur.Get(now, time.Second,
		func() (string, error) { return filewatch.Stamp(s.path), nil },
		func() (*registry, string) {
			reg, stamp, err := s.load()
			if err != nil && s.onError != nil {
				s.onError(fmt.Errorf("%w (keeping the previous providers)", err))
			}
			return reg, stamp
		})
}
