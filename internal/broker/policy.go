package broker

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/policy"
	"github.com/clawdapus/clawgo/internal/toolcall"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// Tool policy on /mcp: the conditions a native tool is listed and run
// under, judged atomically per session.

// policyInput is what the agent's grant conditions see on /mcp: the
// clock, the feeds as last fetched for its model requests, and the tools
// this MCP session called.
func (as *agentServer) policyInput(a *agentctx.Agent, sid string) policy.Input {
	in := as.policyInputOutside(a)
	as.mu.Lock()
	in.Session = as.sessionLocked(sid)
	as.mu.Unlock()
	return in
}

// policyInputOutside is policyInput but for the session, which the
// caller reads under as.mu.
func (as *agentServer) policyInputOutside(a *agentctx.Agent) policy.Input {
	var feeds map[string]string
	if as.b.o.Feeds != nil {
		feeds = as.b.o.Feeds(a)
	}
	return toolcall.PolicyInput(as.b.o.Now(), a, feeds, policy.Session{})
}

// sessionLocked is what session sid called; as.mu is held.
func (as *agentServer) sessionLocked(sid string) policy.Session {
	called := slices.Clone(as.called[sid])
	return policy.Session{Called: called, Rounds: int64(len(called))}
}

// filterList drops from a tools/list answer the tools whose conditions do
// not hold now.
func (as *agentServer) filterList(l *mcp.ListToolsResult, sid string) {
	a := as.current()
	if a == nil || a.Tools == nil || len(a.Tools.Rules) == 0 {
		return
	}
	r := as.b.policy.For(a.Tools, as.policyInput(a, sid))
	kept := l.Tools[:0]
	for _, d := range l.Tools {
		if t, ok := a.NativeTool(d.Name); ok {
			if allowed, _ := r.Allowed(t); !allowed {
				continue
			}
		}
		kept = append(kept, d)
	}
	l.Tools = kept
}

// admit checks tool's conditions for a call on session sid and, when
// they hold, records the call as made before any other call of the
// session is judged: concurrent and batched calls of one session are
// admitted one after another, each seeing those admitted before it (a
// "once" rule runs its tool once). denied is the answer to a call whose
// conditions do not hold.
func (as *agentServer) admit(a *agentctx.Agent, tool *manifest.Tool, sid string) (env toolexec.Envelope, denied bool) {
	ruled := toolcall.Ruled(a, tool)
	var in policy.Input
	if ruled {
		in = as.policyInputOutside(a)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if ruled {
		in.Session = as.sessionLocked(sid)
		if ok, d := as.b.policy.For(a.Tools, in).Allowed(tool); !ok {
			return toolcall.PolicyDenied(d), true
		}
	}
	as.noteCalledLocked(sid, tool.Name)
	return toolexec.Envelope{}, false
}
