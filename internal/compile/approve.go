package compile

import (
	"fmt"
	"path/filepath"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// approvals are the reasons a call of tool name of target, granted to
// svc by entries, waits for a person's decision: the entries' `approve:`
// and, when x-claw.tool-policy.approve-destructive is on (the service's
// own value, else the pod's) and the tool's annotations say
// destructiveHint, that.
func (b *builder) approvals(svc *pod.Service, entries []pod.GrantEntry, target, name string, ann *manifest.Annotations) []manifest.Approval {
	prefix := fmt.Sprintf("%s: service %q: ", filepath.Base(b.pod.File), svc.Name)
	out := pod.ToolApprovals(entries, target, name, prefix)
	on := b.pod.Claw.ToolPolicy.ApproveDestructive
	if sp := svc.Claw.ToolPolicy.ApproveDestructive; sp != nil {
		on = sp
	}
	if on != nil && *on && ann != nil && ann.DestructiveHint != nil && *ann.DestructiveHint {
		out = append(out, manifest.Approval{Always: true, Source: prefix + "x-claw.tool-policy.approve-destructive (the tool's annotations say destructiveHint)"})
	}
	return out
}
