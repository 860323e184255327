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
	if tok, ok := bearerToken(r); ok {
		return tok, true
	}
	if tok := strings.TrimSpace(r.Header.Get("X-Api-Key")); tok != "" {
		return tok, true
	}
	return "", false
}

// noSuchAgent stands in for the expected token when the agent does not
// exist, so an unknown agent costs the same work as a wrong secret.
const noSuchAgent = "clawgo: no such agent"

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
	a, err := s.agents.Get(id)
	expected := noSuchAgent
	if err == nil {
		expected = a.Metadata.Token
	}
	presented, want := sha256.Sum256([]byte(token)), sha256.Sum256([]byte(expected))
	if subtle.ConstantTimeCompare(presented[:], want[:]) != 1 || err != nil {
		return nil, errBadCredentials
	}
	return a, nil
}

// caller authenticates r's presented token (errMissingCredentials when it
// presents none).
func (s *Server) caller(r *http.Request) (*agentctx.Agent, error) {
	token, ok := presentedToken(r)
	if !ok {
		return nil, errMissingCredentials
	}
	return s.authenticate(token)
}
