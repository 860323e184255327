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

	// Built once per registry, not per request.
	urls      []string // upstream URL per format, indexed as Server.formats
	countURLs []string // token-counting URL per format ("" when it has none)
	authValue []string // the Authorization or X-Api-Key header value
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
	switch r.Auth {
	case manifest.ProviderAuthBearer:
		r.authValue = []string{"Bearer " + r.Secret}
	case manifest.ProviderAuthXAPIKey:
		r.authValue = []string{r.Secret}
	}
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
	return errStatus(http.StatusBadRequest, apierror.TypeInvalidRequest, msg)
}

// registry is an immutable set of routes.
type registry struct {
	routes map[string]*Route
	names  string // sorted names, for error messages
}

// buildRegistry merges providers.json (ps, may be nil) with the environment
// and the built-in defaults. Precedence: base URL from <NAME>_BASE_URL, then
// providers.json, then the built-in table; key from providers.json (v2
// active key, else v1 api_key), then <NAME>_API_KEY; auth from
// providers.json, then the built-in table, then bearer when there is a key
// and none without one.
func buildRegistry(ps *manifest.Providers, env map[string]ProviderEnv, formats []wire.Format) (*registry, error) {
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
		}
		if rt.Secret == "" {
			rt.Secret = e.APIKey
		}
		if rt.Auth == "" && known {
			rt.Auth = b.Auth
		}
		if rt.Auth == "" {
			rt.Auth = manifest.ProviderAuthBearer
		}
		if rt.Secret == "" {
			rt.Auth = manifest.ProviderAuthNone
		}
		rt.finish(formats)
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

	cur filewatch.Value[registry]
}

func newProviderSource(authDir string, env map[string]ProviderEnv, formats []wire.Format, onError func(error)) (*providerSource, error) {
	s := &providerSource{path: filepath.Join(authDir, "providers.json"), env: env, formats: formats, onError: onError}
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
	reg, err := buildRegistry(ps, s.env, s.formats)
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
