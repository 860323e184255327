package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// presentedToken returns the "<agent-id>:<secret>" the runner presented:
// the bearer token of Authorization (OpenAI clients) or x-api-key
// (Anthropic clients). ok is false when neither is usable.
func presentedToken(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if tok = strings.TrimSpace(tok); strings.EqualFold(scheme, "Bearer") && tok != "" {
			return tok, true
		}
	}
	if tok := strings.TrimSpace(r.Header.Get("X-Api-Key")); tok != "" {
		return tok, true
	}
	return "", false
}

// dummyDigest is compared against when the agent does not exist, so an
// unknown agent costs the same as a wrong secret.
var dummyDigest = sha256.Sum256([]byte("clawgo: no such agent"))

// authenticate resolves the presented token to an agent. It returns
// errMalformedCredentials (401) when the token is not "<agent-id>:<secret>",
// and errBadCredentials (403) for an unknown agent and a wrong secret alike.
// The comparison is of SHA-256 digests in constant time, which also hides
// the token's length.
func (s *Server) authenticate(token string) (*agentctx.Agent, error) {
	id, _, ok := manifest.SplitToken(token)
	if !ok {
		return nil, errMalformedCredentials
	}
	presented := sha256.Sum256([]byte(token))
	a, err := s.agents.Get(id)
	if err != nil {
		subtle.ConstantTimeCompare(presented[:], dummyDigest[:])
		return nil, errBadCredentials
	}
	want := sha256.Sum256([]byte(a.Metadata.Token))
	if subtle.ConstantTimeCompare(presented[:], want[:]) != 1 {
		return nil, errBadCredentials
	}
	return a, nil
}
