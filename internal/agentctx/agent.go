// Package agentctx owns one agent's compiled context as cllama sees it:
// metadata.json, tools.json, feeds.json and service-auth/*.json under
// <context-root>/<agent-id>/, loaded, validated, cached and reloaded when the
// files change. It does not authenticate requests (internal/proxy does) and
// does not interpret tools or feeds.
package agentctx

import "github.com/clawdapus/clawgo/internal/manifest"

// Agent is an immutable snapshot of one agent's context. A reload produces a
// new Agent; holders of an old one keep a consistent view.
type Agent struct {
	ID       string
	Metadata manifest.Metadata
	// Tools is nil when the agent has no tools.json.
	Tools *manifest.Tools
	// ToolsErr is set when tools.json exists but is malformed. Requests of
	// such an agent must fail (500), never silently lose governance.
	ToolsErr error
	// Feeds is empty when the agent has no feeds.json.
	Feeds    []manifest.Feed
	FeedsErr error
	// ServiceAuth maps service name to its projected credential.
	ServiceAuth map[string]*manifest.ServiceAuth
}

// Managed reports whether requests of this agent go through mediation.
func (a *Agent) Managed() bool { return a.Tools != nil && len(a.Tools.Tools) > 0 }

// ToolsCount is the number of managed tools (0 without a manifest).
func (a *Agent) ToolsCount() int {
	if a.Tools == nil {
		return 0
	}
	return len(a.Tools.Tools)
}
