package pod

import (
	"slices"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/policy"
)

// ApproveAlways is the `approve:` value that holds every call.
const ApproveAlways = "always"

// approve decodes a tools entry's `approve:`: always, or a CEL expression
// over the grant conditions' variables and args.
func (d *decoder) approve(key string, raw any) (string, error) {
	const fix = "write `approve: always` or a CEL expression over the call's arguments, e.g. `approve: 'args.quantity * args.price > 10000'`; it sees args, now, agent, tool, feeds and session, and must give a bool (docs/pod-file.md \"approve\")"
	expr, isStr := raw.(string)
	if !isStr || strings.TrimSpace(expr) == "" {
		return "", d.errf(key, fix, "must be a non-empty string, got %s", describeValue(raw))
	}
	if strings.TrimSpace(expr) == ApproveAlways {
		return ApproveAlways, nil
	}
	if err := policy.CheckApproval(expr); err != nil {
		return "", d.errf(key, fix, "CEL: %v", err)
	}
	return expr, nil
}

// approvalPolicy decodes tool-policy's approve-destructive and
// approval-timeout into p.
func (d *decoder) approvalPolicy(key string, m map[string]any, p *PolicySpec) error {
	if raw, ok := m["approve-destructive"]; ok && raw != nil {
		b, err := d.boolean(key+".approve-destructive", raw)
		if err != nil {
			return err
		}
		p.ApproveDestructive = &b
	}
	if raw, ok := m["approval-timeout"]; ok && raw != nil {
		k := key + ".approval-timeout"
		const fix = "write a duration such as `10m`, `90s` or `1h` (at most 24h)"
		s, isStr := raw.(string)
		if !isStr {
			return d.errf(k, fix, "must be a duration string, got %s", describeValue(raw))
		}
		dur, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return d.errf(k, fix, "%q is not a duration", s)
		}
		if dur < time.Second || dur > manifest.MaxApprovalTimeoutMS*time.Millisecond {
			return d.errf(k, fix, "%s is out of range (1s to 24h)", dur)
		}
		ms := int(dur / time.Millisecond)
		p.ApprovalTimeoutMS = &ms
	}
	return nil
}

// ToolApprovals are the approvals the entries granting tool name of
// target declare, each with where it was written (Source: "<file>:
// service "<svc>": <key>.approve").
func ToolApprovals(entries []GrantEntry, target, name, source string) []manifest.Approval {
	var out []manifest.Approval
	for _, e := range entries {
		if e.Spread || e.Service != target || e.Approve == "" || (!e.All && !slices.Contains(e.Names, name)) {
			continue
		}
		a := manifest.Approval{Source: source + e.Key + ".approve"}
		if e.Approve == ApproveAlways {
			a.Always = true
		} else {
			a.When = e.Approve
		}
		out = append(out, a)
	}
	return out
}
