package broker

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/resultstore"
	"github.com/clawdapus/clawgo/internal/toolcall"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/toolname"
)

// Kept results on /mcp (issue 37; internal/toolcall): a native result
// over the cap is kept whole; its answer holds the envelope (head,
// truncated, original_bytes, result_handle) and a resource_link
// claw-result://<handle> with the result's size. claw.read_result is
// listed for every agent with a native tool, since each has a cap
// (max_tool_result_bytes, defaulted) and so can produce a handle. A
// handle is bound to the agent and the MCP session it was produced on;
// on the sessionless protocol, to the agent.

// ResultURIScheme prefixes a kept result's resource_link.
const ResultURIScheme = "claw-result://"

// readName is the name /mcp lists claw.read_result under for a, or ""
// when it is not listed (no store, or no native tool).
func (b *Broker) readName(a *agentctx.Agent) string {
	if b.o.Results == nil || a == nil || len(a.Native) == 0 {
		return ""
	}
	name := toolname.Readable(toolcall.ReadResult.Name)
	if _, taken := a.NativeTool(name); taken {
		name = toolname.Salted(toolcall.ReadResult.Name, "builtin:")
	}
	return name
}

// nativeTool is the tool a tools/call names: a native tool of a, or the
// built-in claw.read_result where it is listed.
func (b *Broker) nativeTool(a *agentctx.Agent, name string) (*manifest.Tool, bool) {
	if t, ok := a.NativeTool(name); ok {
		return t, true
	}
	if r := b.readName(a); r != "" && (name == r || name == toolcall.ReadResult.Name) {
		return toolcall.ReadResult, true
	}
	return nil, false
}

// results is a call's Call.Results: the agent, and the session (or, on
// the sessionless protocol, the agent alone) as the conversation.
func (b *Broker) results(agent, session string) *toolcall.Results {
	if b.o.Results == nil {
		return nil
	}
	return &toolcall.Results{Store: b.o.Results, Scope: resultstore.Scope{Agent: agent, Conversation: "mcp:" + session}}
}

// resultLink is the resource_link of a kept result.
func resultLink(env toolexec.Envelope) *mcp.ResourceLink {
	size := int64(env.OriginalBytes)
	if size == 0 {
		size = int64(env.OriginalBytesAtLeast)
	}
	return &mcp.ResourceLink{URI: ResultURIScheme + env.ResultHandle, Name: env.ResultHandle, Title: "the whole tool result (read it with claw.read_result)",
		MIMEType: "text/plain", Size: &size}
}
