package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// pathMCP is cllama's MCP endpoint (native mode; compiled runner
// configuration points at it).
const pathMCP = "/mcp"

// errMissingMCPCredentials is the 401 of an MCP request without a bearer
// token: MCP clients send Authorization, never x-api-key.
var errMissingMCPCredentials = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication,
	"missing credentials: send Authorization: Bearer <agent-id>:<secret> (the agent's token; /claw/mcp.json and CLAW_MCP_TOKEN carry it)")

// serveMCP authenticates an MCP request exactly as a model request is
// (the same token, the same 401 and 403 answers, the same audit error
// event), admits it as every route (the agent's requests in progress, the
// in-flight body budget), reads its body within CLLAMA_MCP_MAX_BODY_BYTES
// and BodyReadTimeout, and hands it to the broker with its agent. A 401
// carries WWW-Authenticate, as MCP clients expect.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	agent, err := s.mcpCaller(r)
	if err == nil {
		if err = s.serveAgentMCP(w, r, agent); err == nil {
			return
		}
	}
	se := asStatus(err)
	id := s.newRequestID()
	w.Header().Set("X-Request-Id", id)
	if se.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cllama"`)
	}
	s.refuse(w, s.fallback, &recorder.Refusal{RequestID: id, Format: history.FormatMCP, Route: r.Method + " " + pathMCP, Agent: agent, Start: start, Err: se})
}

// mcpCaller authenticates an MCP request's bearer token.
func (s *Server) mcpCaller(r *http.Request) (*agentctx.Agent, error) {
	token, ok := bearerToken(r)
	if !ok {
		return nil, errMissingMCPCredentials
	}
	return s.authenticate(token)
}

// serveAgentMCP admits agent's MCP request, reads its body and serves it,
// or returns why it did not.
func (s *Server) serveAgentMCP(w http.ResponseWriter, r *http.Request, agent *agentctx.Agent) error {
	if !s.admit.enter(r.Context(), agent.ID) {
		return s.agentBusy(agent.ID)
	}
	defer s.admit.leave(agent.ID)
	body, pb, release, err := s.readBody(w, r, agent.ID, s.mcpBodies())
	if err != nil {
		return err
	}
	pb.disown() // the broker reads it as it likes: left to the collector
	defer release()
	if body != nil {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	s.broker.ServeAgent(w, r, agent)
	return nil
}

// bearerToken is the token of an Authorization: Bearer header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	return tok, strings.EqualFold(scheme, "Bearer") && tok != ""
}
