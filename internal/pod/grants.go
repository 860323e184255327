package pod

import (
	"fmt"
	"slices"
	"sort"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/policy"
)

// AllowAll is the allow value granting every tool of a service.
const AllowAll = "all"

// grantName decodes a bare service name, which grants all of its tools.
func (d *decoder) grantName(key, name string) (GrantEntry, error) {
	if !manifest.ValidServiceName(name) {
		return GrantEntry{}, d.errf(key, "write a compose service name", "%q is not a service name", name)
	}
	return GrantEntry{Service: name, All: true, Key: key}, nil
}

// grantKeys are the keys of a grant entry written as a mapping.
var grantKeys = []string{"service", "allow", "mode", "when", "approve"}

func (d *decoder) grantObject(key string, m map[string]any) (g GrantEntry, err error) {
	g = GrantEntry{Key: key}
	if err := d.unknownKeys(key, m, grantKeys); err != nil {
		return g, err
	}
	if raw, ok := m["mode"]; ok && raw != nil {
		mode, err := d.toolMode(key+".mode", "mode", raw)
		if err != nil {
			return g, err
		}
		g.Mode = mode
	}
	if raw, ok := m["when"]; ok && raw != nil {
		expr, isStr := raw.(string)
		if !isStr {
			return g, d.errf(key+".when", "write a CEL expression as a string, e.g. `when: '\"trading-api.get_market_context\" in session.called'`", "must be a string, got %s", typeName(raw))
		}
		if err := policy.Check(expr); err != nil {
			return g, d.errf(key+".when", "fix the expression; it sees now, agent (id, service, type), tool (name, service, annotations), feeds (by name) and session (called, rounds), and must give a bool (docs/tools-and-feeds.md \"Tool policy\")", "CEL: %v", err)
		}
		g.When = expr
	}
	if raw, ok := m["approve"]; ok && raw != nil {
		if g.Approve, err = d.approve(key+".approve", raw); err != nil {
			return g, err
		}
	}
	svc, err := d.str(key+".service", m["service"], true)
	if err != nil {
		return g, err
	}
	if !manifest.ValidServiceName(svc) {
		return g, d.errf(key+".service", "write a compose service name", "%q is not a service name", svc)
	}
	g.Service = svc
	raw, ok := m["allow"]
	if !ok || raw == nil {
		return g, d.errf(key+".allow", "write `allow: all` or `allow: [tool, ...]`", "required")
	}
	switch t := raw.(type) {
	case string:
		if t != AllowAll {
			return g, d.errf(key+".allow", "write `allow: all` or a list: `allow: ["+t+"]`", "%q is neither `all` nor a list", t)
		}
		g.All = true
	case []any:
		hasAll := false
		for i, e := range t {
			s, ok := e.(string)
			if !ok || s == "" {
				return g, d.errf(fmt.Sprintf("%s.allow[%d]", key, i), "write a tool name", "must be a non-empty string, got %s", typeName(e))
			}
			if s == AllowAll {
				hasAll = true
				continue
			}
			if !manifest.ValidToolName(s) {
				return g, d.errf(fmt.Sprintf("%s.allow[%d]", key, i), "write the tool's name as its descriptor declares it", "%q is not a tool name", s)
			}
			g.Names = append(g.Names, s)
		}
		if hasAll && len(g.Names) > 0 {
			return g, d.errf(key+".allow", "use either `allow: all` or a list of tool names", "`all` is mixed with tool names")
		}
		g.All = hasAll
	default:
		return g, d.errf(key+".allow", "write `allow: all` or `allow: [tool, ...]`", "must be `all` or a list, got %s", typeName(raw))
	}
	return g, nil
}

// toolModes are the values of mode: and x-claw.tools-mode.
var toolModes = []string{manifest.ModeMediated, manifest.ModeNative}

// toolMode decodes a tool mode written at key, whose last part is leaf
// (for the fix).
func (d *decoder) toolMode(key, leaf string, v any) (string, error) {
	s, isStr := v.(string)
	if isStr && manifest.ValidMode(s) {
		return s, nil
	}
	hint := ""
	if isStr {
		hint = didYouMean(s, toolModes)
	}
	fix := fmt.Sprintf("%swrite `%s: %s` (cllama adds the tools to model requests and runs the calls; the default) or `%s: %s` (the runner calls them itself on cllama's /mcp)",
		hint, leaf, manifest.ModeMediated, leaf, manifest.ModeNative)
	return "", d.errf(key, fix, "%s is not a tool mode", describeValue(v))
}

// ExpandGrants applies the defaults rule (spec 000 §2) to the service's
// tools: an omitted list inherits tools-defaults; a declared one replaces
// them, with `...` splicing the defaults at its position. `...` without
// defaults is an error.
func ExpandGrants(file, service string, c *Claw, s *ServiceClaw) ([]GrantEntry, error) {
	return expandList(toolsList, file, service, s.HasTools, s.Tools, c.HasToolsDefaults, c.ToolsDefaults)
}

// NormaliseGrants merges expanded entries by service: `all` wins, names are
// unioned. The result is sorted by service, names sorted and unique.
func NormaliseGrants(entries []GrantEntry) []Grant {
	by := map[string]*Grant{}
	names := map[string]map[string]bool{}
	for _, e := range entries {
		g := by[e.Service]
		if g == nil {
			g = &Grant{Service: e.Service}
			by[e.Service] = g
			names[e.Service] = map[string]bool{}
		}
		g.Keys = append(g.Keys, e.Key)
		g.All = g.All || e.All
		for _, n := range e.Names {
			names[e.Service][n] = true
			if g.NameKeys == nil {
				g.NameKeys = map[string]string{}
			}
			if _, ok := g.NameKeys[n]; !ok {
				g.NameKeys[n] = e.Key
			}
		}
	}
	out := make([]Grant, 0, len(by))
	for svc, g := range by {
		if !g.All {
			for n := range names[svc] {
				g.Tools = append(g.Tools, n)
			}
			sort.Strings(g.Tools)
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service < out[j].Service })
	return out
}

// ToolMode is the mode in which entries (a service's expanded grants,
// see ExpandGrants) give tool name of target to the agent of service: the
// mode of every entry granting it (see Claw.EntryMode). Two entries
// granting it in different modes are an error naming both: a tool is
// native or mediated for an agent, not both.
func ToolMode(file, service string, c *Claw, entries []GrantEntry, target, name string) (string, error) {
	mode, from := "", ""
	for _, e := range entries {
		if e.Spread || e.Service != target || (!e.All && !slices.Contains(e.Names, name)) {
			continue
		}
		m := c.EntryMode(e)
		if from == "" {
			mode, from = m, e.Key
			continue
		}
		if m != mode {
			return "", &Error{File: file, Service: service, Key: e.Key,
				Problem: fmt.Sprintf("tool %q is granted as %s here and as %s by %s; a tool is one or the other for an agent", target+"."+name, m, mode, from),
				Fix:     fmt.Sprintf("pick one mode: write the same `mode:` on %s and %s (an entry without one takes x-claw.tools-mode, default %s), or grant the tool in one of them only", from, e.Key, manifest.ModeMediated)}
		}
	}
	if from == "" {
		return c.EntryMode(GrantEntry{}), nil
	}
	return mode, nil
}

// WhenRef is a grant condition and the entry it was written on.
type WhenRef struct {
	When string
	Key  string
}

// ToolWhen is the condition under which entries give tool name of target:
// nil when some entry granting it has no `when` (grants are a union, and
// that one always holds), else every granting entry's condition, in
// order (the tool is available while any holds).
func ToolWhen(entries []GrantEntry, target, name string) []WhenRef {
	var out []WhenRef
	for _, e := range entries {
		if e.Spread || e.Service != target || (!e.All && !slices.Contains(e.Names, name)) {
			continue
		}
		if e.When == "" {
			return nil
		}
		out = append(out, WhenRef{When: e.When, Key: e.Key})
	}
	return out
}
