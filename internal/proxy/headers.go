package proxy

import (
	"net/http"
	"net/textproto"
	"slices"
	"strings"

	"github.com/clawdapus/clawgo/internal/wire"
)

// baseForwardedHeaders is the allowlist of runner headers sent upstream,
// before the formats add theirs (wire.HeaderForwarding).
// Credential starvation (spec 000, ADR-007) means the agent's token must
// never leave the proxy, and an allowlist cannot leak a header nobody
// thought of (Authorization, x-api-key, cookies, Azure's api-key, an
// OpenAI-Organization that would bill another org...). Everything here is
// protocol, not identity. Content-Type is always set to application/json
// by send.
var baseForwardedHeaders = []string{
	"Accept",
	"User-Agent",
	"Idempotency-Key",
	// OpenRouter's optional app attribution.
	"Http-Referer",
	"X-Title",
}

// forwardedHeaders is the allowlist: the base names and those the formats
// declare, canonical, each once.
func forwardedHeaders(fs []wire.Format) []string {
	names := slices.Clone(baseForwardedHeaders)
	for _, f := range fs {
		if hf, ok := f.(wire.HeaderForwarding); ok {
			for _, k := range hf.ForwardedHeaders() {
				if k = http.CanonicalHeaderKey(k); !slices.Contains(names, k) {
					names = append(names, k)
				}
			}
		}
	}
	return names
}

// copyRequestHeaders copies the headers of in that allow names to out.
func copyRequestHeaders(out, in http.Header, allow []string) {
	for _, k := range allow {
		if v := in[k]; len(v) > 0 {
			out[k] = v
		}
	}
	// Headers whose names vary (the SDKs' X-Stainless-* telemetry) are
	// harmless and help providers debug; copy them too.
	for k, v := range in {
		if strings.HasPrefix(k, "X-Stainless-") {
			out[k] = v
		}
	}
}

// hopByHop are the RFC 9110 §7.6.1 connection-specific headers, which a
// proxy must not forward in either direction.
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// copyResponseHeaders copies an upstream response's headers to the runner,
// minus hop-by-hop headers (and any the Connection header names), cookies
// (they belong to the proxy's session with the provider, not the agent) and
// Content-Length (the Go server computes it, or chunks).
func copyResponseHeaders(out, in http.Header) {
	var named []string
	for _, v := range in["Connection"] {
		for _, f := range strings.Split(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				named = append(named, http.CanonicalHeaderKey(f))
			}
		}
	}
	for k, v := range in {
		if skipResponseHeader(k, named) {
			continue
		}
		out[k] = v
	}
}

func skipResponseHeader(k string, named []string) bool {
	switch k {
	case "Set-Cookie", "Content-Length", "Alt-Svc":
		return true
	}
	for _, h := range hopByHop {
		if k == h {
			return true
		}
	}
	for _, h := range named {
		if k == h {
			return true
		}
	}
	return false
}
