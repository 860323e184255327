package pod

import (
	"fmt"
	"sort"

	"github.com/clawdapus/clawgo/internal/manifest"
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

func (d *decoder) grantObject(key string, m map[string]any) (GrantEntry, error) {
	g := GrantEntry{Key: key}
	if err := d.strictKeys(key, m, []string{"service", "allow"}); err != nil {
		return g, err
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
