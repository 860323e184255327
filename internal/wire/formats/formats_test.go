package formats

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/anthropic"
	"github.com/clawdapus/clawgo/internal/wire/openai"
)

func TestUnregisteredFormatIsAnError(t *testing.T) {
	for _, name := range []exchange.Format{"", "gemini", "OpenAI"} {
		f, err := Lookup(name)
		if f != nil || !errors.Is(err, ErrUnregistered) {
			t.Errorf("Lookup(%q) = %v, %v; want ErrUnregistered", name, f, err)
		}
	}
}

// Every registered format has every ability a stage of cllama uses: the
// proxy's routes, errors, usage and stream end (wire.Format), feeds, the
// history assembler and the managed-tool loop.
func TestRegisteredFormatsImplementWhatTheProxyNeeds(t *testing.T) {
	if len(All()) == 0 {
		t.Fatal("no format registered")
	}
	for _, f := range All() {
		t.Run(f.Name(), func(t *testing.T) {
			if got, err := Lookup(exchange.Format(f.Name())); err != nil || got != f {
				t.Fatalf("Lookup(%q) = %v, %v", f.Name(), got, err)
			}
			if _, ok := f.(wire.ToolLoop); !ok {
				t.Error("no managed-tool loop (wire.ToolLoop)")
			}
			if _, ok := f.(wire.FeedInjector); !ok {
				t.Error("cannot carry feeds (wire.FeedInjector)")
			}
			if _, ok := f.(wire.StreamAssembling); !ok {
				t.Error("cannot assemble streams for history (wire.StreamAssembling)")
			}
			ep := f.Endpoint()
			if !strings.HasPrefix(ep.Route, "/v1/") || !strings.HasPrefix(ep.Upstream, "/") || strings.HasPrefix(ep.Upstream, "/v1/") {
				t.Errorf("endpoint %+v: want a /v1/ route and an upstream path below the base URL's version", ep)
			}
			body := f.ErrorBody("api_error", `a "<quoted>" message`)
			var v any
			if json.Unmarshal(body, &v) != nil || !strings.Contains(string(body), `<quoted>`) {
				t.Errorf("error body %s: want JSON carrying the message unescaped", body)
			}
			if ev := f.ErrorEvent("api_error", `a "<quoted>" message`); !json.Valid(ev.Data) || !strings.Contains(string(ev.Data), `<quoted>`) || !strings.Contains(string(ev.Data), "api_error") {
				t.Errorf("error event %q: want JSON carrying the type and the message unescaped", ev.Data)
			}
		})
	}
}

// GET /v1/models carries no body: the fallback format answers it when no
// format claims the request's headers.
func TestFallbackListsModels(t *testing.T) {
	if _, ok := Fallback().(wire.ModelCatalog); !ok {
		t.Fatalf("fallback %s cannot list models (wire.ModelCatalog)", Fallback().Name())
	}
}

func TestIndexRefusesInconsistentLists(t *testing.T) {
	cases := map[string][]wire.Format{
		"empty":           nil,
		"duplicate name":  {openai.New(), openai.New()},
		"duplicate route": {openai.New(), renamed{openai.New(), "other", wire.Endpoint{}}},
		"no route":        {renamed{anthropic.New(), "x", wire.Endpoint{Route: "", Upstream: "/x"}}},
		"no name":         {renamed{anthropic.New(), "", wire.Endpoint{}}},
	}
	for name, list := range cases {
		if _, err := index(list); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := index(All()); err != nil {
		t.Fatal(err)
	}
}

func TestFallbackIsRegistered(t *testing.T) {
	if f, err := Lookup(exchange.Format(Fallback().Name())); err != nil || f != Fallback() {
		t.Fatal(f, err)
	}
}

// renamed is a format under another name and, when ep is set, endpoint.
type renamed struct {
	wire.Format
	name string
	ep   wire.Endpoint
}

func (r renamed) Name() string { return r.name }

func (r renamed) Endpoint() wire.Endpoint {
	if r.ep == (wire.Endpoint{}) {
		return r.Format.Endpoint()
	}
	return r.ep
}

// providers.json "formats" names registered formats: the list the manifest
// validates against is the registry's.
func TestProviderFormatsAreTheRegisteredOnes(t *testing.T) {
	var names []string
	for _, f := range All() {
		names = append(names, f.Name())
	}
	if !slices.Equal(names, manifest.ProviderFormats) {
		t.Fatalf("manifest.ProviderFormats = %q, registered formats %q: keep them alike", manifest.ProviderFormats, names)
	}
}
