package broker

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolcall"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// Records: a native call is an audit tool_call event and a history
// entry, with the fields of a mediated call.

// record writes the call's audit event and history entry: the fields of
// a mediated call, mode native.
func (as *agentServer) record(id string, start time.Time, name string, tool *manifest.Tool, args json.RawMessage, env toolexec.Envelope, latency int64, res *mcp.CallToolResult, kept *toolcall.Kept) {
	b := as.b
	f := toolcall.Fact{Agent: as.id, RequestID: id, Format: history.FormatMCP, Mode: manifest.ModeNative,
		Name: name, Tool: tool, Arguments: args, Envelope: env, LatencyMS: latency, Kept: kept}
	tc := f.Trace()
	b.rec.Emit(f.Event())
	if e, ok := f.KeptEvent(); ok {
		b.rec.Emit(e)
	}
	if !b.rec.HistoryOn() && !b.rec.HasSinks() {
		return
	}
	request, _ := json.Marshal(map[string]any{"method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	response, _ := json.Marshal(res)
	e := history.Entry{
		ID: id, Timestamp: start.UTC(), AgentID: as.id, Pod: b.o.Pod, Format: history.FormatMCP,
		Status: history.StatusOK, StatusCode: http.StatusOK, LatencyMS: b.o.Now().Sub(start).Milliseconds(),
		Request: request, Response: response,
		ToolTrace: []history.Round{{Round: 0, ToolCalls: []history.ToolCall{tc}}},
	}
	if err := b.rec.Append(e); err != nil {
		b.rec.Emit(audit.Event{ClawID: as.id, Type: audit.TypeError, RequestID: id, Format: history.FormatMCP, Error: "session history: " + err.Error()})
	}
}
