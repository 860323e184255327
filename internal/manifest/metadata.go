package manifest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Metadata is <context>/<agent-id>/metadata.json.
type Metadata struct {
	// Token is "<agent-id>:<secret>"; the agent presents it as its API key.
	Token   string `json:"token"`
	Pod     string `json:"pod,omitempty"`
	Service string `json:"service,omitempty"`
	// Type is the agent's runner type (for example "openclaw" or "generic").
	Type string `json:"type,omitempty"`
	// Models is the agent's model allow-list, each "<provider>/<model>"
	// (x-claw.models, else x-claw.cllama-defaults.models). Empty means any
	// model of the configured providers. cllama refuses others with 403
	// model_not_allowed, and lists these on GET /v1/models.
	Models []string `json:"models,omitempty"`
	// Budget is the agent's budget (x-claw.budget, else the pod's
	// budget-defaults): cllama refuses a model call that would start past
	// one of its hard limits with 402 budget_exceeded.
	Budget []Budget `json:"budget,omitempty"`
}

// ValidAgentID reports whether id is safe to use as a directory name: it
// matches ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$, the strict charset an agent
// id must match before it is used as a path element, which rules out
// separators, dots-only names and anything a shell or filesystem could
// interpret. Every request checks one, so it is a loop, not a regexp
// (the fuzz test holds it to the pattern).
func ValidAgentID(id string) bool {
	if len(id) == 0 || len(id) > 128 || id[0] == '_' || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// SplitToken splits "<agent-id>:<secret>". ok is false when either part is
// empty or the agent id fails ValidAgentID.
func SplitToken(token string) (agentID, secret string, ok bool) {
	agentID, secret, found := strings.Cut(token, ":")
	if !found || secret == "" || !ValidAgentID(agentID) {
		return "", "", false
	}
	return agentID, secret, true
}

// ParseMetadata decodes and validates metadata.json for agentID.
func ParseMetadata(data []byte, agentID string) (*Metadata, error) {
	var m Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("metadata.json: %w", err)
	}
	id, _, ok := SplitToken(m.Token)
	if !ok {
		return nil, fmt.Errorf("metadata.json: token: must be \"<agent-id>:<secret>\"; recompile the pod with `claw compile`")
	}
	if id != agentID {
		return nil, fmt.Errorf("metadata.json: token: agent id %q does not match directory %q", id, agentID)
	}
	for i, b := range m.Budget {
		if err := b.Check(); err != nil {
			return nil, fmt.Errorf("metadata.json: budget[%d]: %w; fix x-claw.budget and recompile with `claw compile`", i, err)
		}
	}
	return &m, nil
}
