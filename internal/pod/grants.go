package pod

import (
	"fmt"
	"sort"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// Spread is the list entry that splices the pod defaults in place.
const Spread = "..."

// AllowAll is the allow value granting every tool of a service.
const AllowAll = "all"

// grants decodes a tools: or tools-defaults: list. spreadOK is false for
// the defaults themselves.
func (d *decoder) grants(key string, v any, spreadOK bool) ([]GrantEntry, error) {
	if v == nil {
		return []GrantEntry{}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, d.errf(key, "write a list such as [{service: trading-api, allow: all}]", "must be a list, got %s", typeName(v))
	}
	out := make([]GrantEntry, 0, len(list))
	spreadAt := -1
	for i, e := range list {
		ekey := fmt.Sprintf("%s[%d]", key, i)
		switch t := e.(type) {
		case string:
			if t == Spread {
				if !spreadOK {
					return nil, d.errf(ekey, "remove it; `...` belongs in a service's tools list", "`...` cannot appear in the pod defaults")
				}
				if spreadAt >= 0 {
					return nil, d.errf(ekey, "keep a single `...`", "`...` appears twice (first at %s[%d])", key, spreadAt)
				}
				spreadAt = i
				out = append(out, GrantEntry{Spread: true, Key: ekey})
				continue
			}
			if !manifest.ValidServiceName(t) {
				return nil, d.errf(ekey, "write a compose service name", "%q is not a service name", t)
			}
			// A bare service name grants all of its tools.
			out = append(out, GrantEntry{Service: t, All: true, Key: ekey})
		case map[string]any:
			g, err := d.grantObject(ekey, t)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		default:
			return nil, d.errf(ekey, "write {service: <name>, allow: all | [tool, ...]}", "must be a mapping, a service name or `...`, got %s", typeName(e))
		}
	}
	return out, nil
}

func (d *decoder) grantObject(key string, m map[string]any) (GrantEntry, error) {
	g := GrantEntry{Key: key}
	d.unknownKeys(key, m, []string{"service", "allow"})
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

// ExpandGrants applies the defaults rule (spec 000 §2): an omitted list
// inherits the defaults; a declared one replaces them, with `...` splicing
// the defaults at its position. `...` without defaults is an error.
func ExpandGrants(file, service string, c *Claw, s *ServiceClaw) ([]GrantEntry, error) {
	if !s.HasTools {
		return append([]GrantEntry(nil), c.ToolsDefaults...), nil
	}
	out := make([]GrantEntry, 0, len(s.Tools)+len(c.ToolsDefaults))
	for _, g := range s.Tools {
		if !g.Spread {
			out = append(out, g)
			continue
		}
		if !c.HasToolsDefaults {
			return nil, &Error{File: file, Service: service, Key: g.Key, Problem: "`...` splices tools-defaults, but the pod declares none", Fix: "add x-claw.tools-defaults at pod level, or remove `...`"}
		}
		out = append(out, c.ToolsDefaults...)
	}
	return out, nil
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
