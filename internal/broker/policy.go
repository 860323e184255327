package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

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

// approval is how a tools/call is held for a person's decision (nil when
// cllama holds none): the wait ends when the client cancels the call or
// goes away (callCtx), and a client that sent a progress token hears
// notifications/progress while it waits (on reqCtx, the request's own
// stream).
func (as *agentServer) approval(reqCtx, callCtx context.Context, a *agentctx.Agent, req *mcp.CallToolRequest) *toolcall.Approval {
	if as.b.o.Approvals == nil {
		return nil
	}
	sid := sessionID(req)
	ap := &toolcall.Approval{Manager: as.b.o.Approvals, Policy: as.b.policy, Wait: callCtx,
		Input: func() policy.Input { return as.policyInput(a, sid) }}
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		ap.Progress = func(waited, timeout time.Duration) {
			_ = req.Session.NotifyProgress(reqCtx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: waited.Seconds(), Total: timeout.Seconds(),
				Message: fmt.Sprintf("waiting for a person's approval (%s of %s)", waited.Round(time.Second), timeout)})
		}
	}
	return ap
}
