package compile

import (
	"fmt"
	"strings"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// Mount points inside agent containers.
const (
	AgentClawDir   = "/claw"
	AgentSkillsDir = "/claw/skills"
	// AgentMCPConfig is the agent's MCP client configuration (agents with
	// native tools only).
	AgentMCPConfig = "/claw/mcp.json"
)

// clawdapusMD renders the agent's view of its pod (spec 000 §1, "Skills and
// tools"): surfaces, skills, feeds and the managed tools. A service that
// declares tools has its endpoint details omitted: agents act through
// governed tools or not at all.
func (b *builder) clawdapusMD(a *Agent) []byte {
	var w strings.Builder
	fmt.Fprintf(&w, "# CLAWDAPUS.md\n\n")
	fmt.Fprintf(&w, "You are agent `%s` (service `%s`) in pod `%s`.\n", a.ID, a.Service, b.pod.Name)
	if a.Cllama {
		fmt.Fprintf(&w, "Your model traffic goes through the pod's governance proxy; use the model credentials and base URLs in your environment as they are.\n")
	}
	w.WriteString("\n## Surfaces\n\n")
	if len(a.Surfaces) == 0 {
		w.WriteString("None.\n\n")
	}
	for _, raw := range a.Surfaces {
		target, isService := strings.CutPrefix(raw, "service://")
		fmt.Fprintf(&w, "### %s\n\n", raw)
		sd := b.descs[target]
		if !isService || sd == nil {
			w.WriteString("No description available.\n\n")
			continue
		}
		d := sd.Descriptor
		if d.Description != "" {
			fmt.Fprintf(&w, "%s\n\n", oneLine(d.Description))
		}
		switch {
		case d.HasTools() && a.hasToolsOf(target):
			w.WriteString("Use this service through your managed tools (see Tools); its HTTP endpoints are not for direct use.\n\n")
		case d.HasTools():
			w.WriteString("This service is used through managed tools, none of which are granted to you; its HTTP endpoints are not for direct use.\n\n")
		case len(d.Endpoints) > 0:
			fmt.Fprintf(&w, "Endpoints (base URL `http://%s`):\n\n", target+portSuffix(b, target))
			for _, e := range d.Endpoints {
				fmt.Fprintf(&w, "- `%s %s`", e.Method, e.Path)
				if e.Description != "" {
					fmt.Fprintf(&w, " — %s", oneLine(e.Description))
				}
				w.WriteString("\n")
			}
			w.WriteString("\n")
		}
	}
	w.WriteString("## Skills\n\n")
	if len(a.Skills) == 0 {
		w.WriteString("None.\n")
	}
	for _, s := range a.Skills {
		fmt.Fprintf(&w, "- `%s/%s.md` — how to use `%s`\n", AgentSkillsDir, s, s)
	}
	w.WriteString("\n## Feeds\n\n")
	if len(a.Feeds) == 0 {
		w.WriteString("None.\n")
	} else {
		w.WriteString("Live data injected into your context on every request:\n\n")
	}
	for _, f := range a.Feeds {
		fmt.Fprintf(&w, "- `%s` from `%s` (refreshed at most every %ds)\n", f.Name, f.Source, f.TTL)
	}
	w.WriteString("\n## Tools\n\n")
	var mediated, native []ToolSummary
	for _, t := range a.Tools {
		if t.Mode == manifest.ModeNative {
			native = append(native, t)
		} else {
			mediated = append(mediated, t)
		}
	}
	if len(a.Tools) == 0 {
		w.WriteString("None.\n")
	}
	if len(mediated) > 0 {
		w.WriteString("Managed tools you may call by their presented name; the proxy executes them.\n\n")
		w.WriteString("| presented name | canonical name | description |\n|---|---|---|\n")
	}
	for _, t := range mediated {
		fmt.Fprintf(&w, "| `%s` | `%s` | %s |\n", t.Presented, t.Canonical, toolCell(t))
	}
	if len(native) > 0 {
		if len(mediated) > 0 {
			w.WriteString("\n")
		}
		fmt.Fprintf(&w, "Native tools your runner lists and calls itself, by canonical name, on the pod's MCP server `%s` (`%s`; client configuration in `%s`, or `%s` and `%s`).\n\n",
			b.pod.Name, MCPURL(), AgentMCPConfig, EnvMCPURL, EnvMCPToken)
		w.WriteString("| canonical name | description |\n|---|---|\n")
	}
	for _, t := range native {
		fmt.Fprintf(&w, "| `%s` | %s |\n", t.Canonical, toolCell(t))
	}
	return []byte(w.String())
}

// toolCell is a tool's description as a table cell.
func toolCell(t ToolSummary) string {
	desc := oneLine(t.Description)
	if t.ReadOnly {
		desc = strings.TrimSpace(desc + " (read-only)")
	}
	return strings.ReplaceAll(desc, "|", "\\|")
}

func portSuffix(b *builder, service string) string {
	svc, ok := b.pod.Services[service]
	if !ok {
		return ""
	}
	u, err := b.baseURL(svc)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u, "http://"+service)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// hasToolsOf reports whether the agent was granted any tool of service.
func (a *Agent) hasToolsOf(service string) bool {
	for _, t := range a.tools {
		if t.Execution.Service == service {
			return true
		}
	}
	return false
}
