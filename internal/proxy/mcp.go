package proxy

import (
	"net/http"
	"strings"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
)

// pathMCP is cllama's MCP endpoint (native mode; compiled runner
// configuration points at it).
const pathMCP = "/mcp"

// errMissingMCPCredentials is the 401 of an MCP request without a bearer
// token: MCP clients send Authorization, never x-api-key.
var errMissingMCPCredentials = errStatus(http.StatusUnauthorized, "authentication_error",
	"missing credentials: send Authorization: Bearer <agent-id>:<secret> (the agent's token; /claw/mcp.json and CLAW_MCP_TOKEN carry it)")

// serveMCP authenticates an MCP request exactly as a model request is
// (the same token, the same 401 and 403 answers, the same audit error
// event) and hands it to the broker with its agent. A 401 carries
// WWW-Authenticate, as MCP clients expect.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	token, ok := bearerToken(r)
	var err error
	if !ok {
		err = errMissingMCPCredentials
	} else {
		agent, aerr := s.authenticate(token)
		if aerr == nil {
			s.broker.ServeAgent(w, r, agent)
			return
		}
		err = aerr
	}
	se := asStatus(err)
	id := s.newRequestID()
	w.Header().Set("X-Request-Id", id)
	if se.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cllama"`)
	}
	s.rec.Emit(audit.Event{Type: audit.TypeError, RequestID: id, Format: history.FormatMCP, Route: r.Method + " " + pathMCP,
		StatusCode: se.status, LatencyMS: audit.Ptr(sinceMS(s.now(), start)), Error: se.msg})
	writeError(w, s.fallback, se)
}

// bearerToken is the token of an Authorization: Bearer header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	return tok, strings.EqualFold(scheme, "Bearer") && tok != ""
}
