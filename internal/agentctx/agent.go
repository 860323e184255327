// Package agentctx owns one agent's compiled context as cllama sees it:
// metadata.json, tools.json, feeds.json and service-auth/*.json under
// <context-root>/<agent-id>/, loaded, validated, cached and reloaded when the
// files change. It does not authenticate requests (internal/proxy does) and
// does not interpret tools or feeds.
package agentctx

import (
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolname"
)

// Agent is an immutable snapshot of one agent's context. A reload produces a
// new Agent; holders of an old one keep a consistent view.
type Agent struct {
	ID       string
	Metadata manifest.Metadata
	// Tools is nil when the agent has no tools.json. It holds every
	// granted tool, mediated and native.
	Tools *manifest.Tools
	// Native are the tools of Tools in native mode, in manifest order:
	// served on cllama's MCP endpoint, never added to model requests.
	Native []*manifest.Tool
	// nativeAlias maps each native tool's canonical name to the
	// provider-safe name /mcp lists it under (internal/toolname), and
	// nativeByAlias back.
	nativeAlias   map[string]string
	nativeByAlias map[string]*manifest.Tool
	// mediated counts the tools of Tools in mediated mode.
	mediated int
	// ToolsErr is set when tools.json exists but is malformed. Requests of
	// such an agent must fail (500), never silently lose governance.
	ToolsErr error
	// Feeds is empty when the agent has no feeds.json.
	Feeds    []manifest.Feed
	FeedsErr error
	// ServiceAuth maps service name to its projected credential.
	ServiceAuth map[string]*manifest.ServiceAuth
}

// Managed reports whether requests of this agent go through mediation:
// it has at least one mediated tool. An agent whose tools are all native
// is relayed like one without tools; its runner calls them on /mcp.
func (a *Agent) Managed() bool { return a.mediated > 0 }

// SetTools installs a parsed manifest and sorts its tools by mode. The
// store calls it on load; tests building an Agent by hand call it too.
func (a *Agent) SetTools(t *manifest.Tools) {
	a.Tools, a.Native, a.mediated = t, nil, 0
	a.nativeAlias, a.nativeByAlias = nil, nil
	if t == nil {
		return
	}
	var names []string
	for i := range t.Tools {
		if t.Tools[i].Native() {
			a.Native = append(a.Native, &t.Tools[i])
			names = append(names, t.Tools[i].Name)
		} else {
			a.mediated++
		}
	}
	if len(names) == 0 {
		return
	}
	alias, err := toolname.Aliases(names)
	if err != nil {
		// A readable alias equal to another tool's hashed one: every
		// tool takes its hashed alias, unique by construction.
		alias = make(map[string]string, len(names))
		for _, n := range names {
			alias[n] = toolname.Hashed(n)
		}
	}
	a.nativeAlias = alias
	a.nativeByAlias = make(map[string]*manifest.Tool, len(a.Native))
	for _, nt := range a.Native {
		a.nativeByAlias[alias[nt.Name]] = nt
	}
}

// NativeTool returns the agent's native-mode tool of that name: the
// provider-safe name /mcp lists it under, or its canonical name.
func (a *Agent) NativeTool(name string) (*manifest.Tool, bool) {
	if t, ok := a.nativeByAlias[name]; ok {
		return t, true
	}
	for _, t := range a.Native {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// NativeName is the provider-safe name /mcp lists the native tool of
// that canonical name under.
func (a *Agent) NativeName(canonical string) string {
	if n, ok := a.nativeAlias[canonical]; ok {
		return n
	}
	return toolname.Hashed(canonical)
}

// ToolsCount is the number of managed tools (0 without a manifest).
func (a *Agent) ToolsCount() int {
	if a.Tools == nil {
		return 0
	}
	return len(a.Tools.Tools)
}
