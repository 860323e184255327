package proxy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/wire/apierror"

	"github.com/clawdapus/clawgo/internal/wire"
)

// modelRouter decides which provider serves a request's model (docs/cllama.md
// "Routing"):
//
//   - "<provider>/<model>" with a configured provider goes there, the
//     prefix removed;
//   - a bare model (no "/") goes to the endpoint format's own provider
//     (wire.NativeProvider, or CLLAMA_<FORMAT>_PROVIDER) when configured,
//     else to the default provider (CLLAMA_DEFAULT_PROVIDER);
//   - a prefix that is no configured provider is, when the default
//     provider is an aggregator (its model ids hold "/",
//     "meta-llama/llama-3.3-70b"), the whole of that provider's model name.
//
// Anything else is a 400 naming the known providers and how to declare a
// default. It reads only the model string scanRequest located.
type modelRouter struct {
	// defaultProvider is CLLAMA_DEFAULT_PROVIDER ("" when none).
	defaultProvider string
	// bare is, per format index (as Server.formats), the provider of bare
	// model names before the default ("" when the format has none).
	bare []string
}

func newModelRouter(cfg Config, formats []wire.Format) modelRouter {
	m := modelRouter{defaultProvider: cfg.DefaultProvider, bare: make([]string, len(formats))}
	for i, f := range formats {
		if p := cfg.FormatProviders[f.Name()]; p != "" {
			m.bare[i] = p
		} else if np, ok := f.(wire.NativeProvider); ok {
			m.bare[i] = np.NativeProvider()
		}
	}
	return m
}

// resolve returns the route and the model name to send upstream for model
// on the endpoint of format fi.
func (m modelRouter) resolve(reg *registry, fi int, model string) (*Route, string, error) {
	prefix, rest, hasPrefix := strings.Cut(model, "/")
	if hasPrefix {
		if prefix == "" || rest == "" {
			return nil, "", badRequest(`"model" must be a bare model name or of the form "<provider>/<model>", got ` + quoteForMessage(model))
		}
		if rt := reg.routes[strings.ToLower(prefix)]; rt != nil {
			return rt, rest, nil
		}
		if rt := reg.routes[m.defaultProvider]; rt != nil && rt.Aggregator {
			return rt, model, nil
		}
		return nil, "", badRequest(fmt.Sprintf("unknown provider %s in model %s; known providers: %s%s",
			quoteForMessage(prefix), quoteForMessage(model), reg.names, m.aggregatorHint()))
	}
	if rt := m.bareRoute(reg, fi); rt != nil {
		return rt, model, nil
	}
	return nil, "", badRequest(fmt.Sprintf(`model %s names no provider and this endpoint has no default one: write it as "<provider>/<model>" (known providers: %s), or declare the pod's default provider with x-claw.cllama-defaults.default-provider (cllama reads CLLAMA_DEFAULT_PROVIDER)`,
		quoteForMessage(model), reg.names))
}

// bareRoute is the provider bare model names on format fi's endpoint go
// to, or nil when there is none.
func (m modelRouter) bareRoute(reg *registry, fi int) *Route {
	if p := m.bare[fi]; p != "" {
		if rt := reg.routes[p]; rt != nil {
			return rt
		}
	}
	return reg.routes[m.defaultProvider]
}

func (m modelRouter) aggregatorHint() string {
	if m.defaultProvider == "" {
		return ` (to send such names whole to an aggregator such as openrouter, make it the default provider: x-claw.cllama-defaults.default-provider)`
	}
	return ""
}

// TypeModelNotAllowed is the error type of a model outside the agent's
// allow-list (403).
const TypeModelNotAllowed = "model_not_allowed"

// allowModel checks the routed model, "<provider>/<model>", against the
// agent's allow-list (metadata.json "models"; empty allows any model).
func allowModel(a *agentctx.Agent, routed, asked string) error {
	allowed := a.Metadata.Models
	if len(allowed) == 0 || slices.Contains(allowed, routed) {
		return nil
	}
	as := quoteForMessage(asked)
	if routed != asked {
		as += " (" + quoteForMessage(routed) + ")"
	}
	return apierror.New(http.StatusForbidden, TypeModelNotAllowed, fmt.Sprintf("model %s is not allowed for agent %s; allowed models: %s",
		as, a.ID, strings.Join(allowed, ", ")))
}
