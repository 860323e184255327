package toolcall

import (
	"fmt"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/policy"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// Tool policy is decided the same way for a mediated call and a native
// one; only what the session holds differs (the hidden rounds a turn
// restored and admitted, or an MCP session's calls), and the callers
// supply it.

// PolicyInput is what agent a's grant conditions see at now: the agent,
// its feeds as last injected (by name; JSON bodies parsed), and session.
func PolicyInput(now time.Time, a *agentctx.Agent, feeds map[string]string, session policy.Session) policy.Input {
	in := policy.Input{
		Now:     now,
		Agent:   policy.Agent{ID: a.ID, Service: a.Metadata.Service, Type: a.Metadata.Type},
		Session: session,
	}
	if len(feeds) > 0 {
		in.Feeds = make(map[string]any, len(feeds))
		for name, body := range feeds {
			in.Feeds[name] = policy.FeedValue([]byte(body))
		}
	}
	return in
}

// Ruled reports whether a call of tool by a is subject to conditions.
func Ruled(a *agentctx.Agent, tool *manifest.Tool) bool {
	return a.Tools != nil && len(a.Tools.Rules) > 0 && len(tool.When) > 0
}

// PolicyDenied is the answer to a call whose grant conditions (d) do not
// hold: policy_denied, naming the rules, the service not called.
func PolicyDenied(d policy.Denial) toolexec.Envelope {
	msg := fmt.Sprintf("not executed: %s is not available now; its grant conditions (%s) do not hold", d.Tool, strings.Join(d.Rules, ", "))
	if d.Err != nil {
		msg += fmt.Sprintf(" (%v)", d.Err)
	}
	return toolexec.Fail(toolexec.CodePolicyDenied, msg, 0)
}
