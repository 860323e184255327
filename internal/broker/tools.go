package broker

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolcall"
)

// The tool list: each agent's MCP server lists its native tools, under
// provider-safe names, following its compiled context.

// sync makes the server's tool list the native tools of snapshot a. A
// snapshot is immutable, so an unchanged pointer means nothing to do; a
// reload that changes the list notifies open sessions (list_changed).
func (as *agentServer) sync(a *agentctx.Agent) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.synced == a {
		return
	}
	as.synced = a
	defs := make([]*mcp.Tool, 0, len(a.Native))
	for _, t := range a.Native {
		d, err := definition(t, a.NativeName(t.Name))
		if err != nil {
			as.b.rec.Emit(audit.Event{Type: audit.TypeManifestError, ClawID: as.id, Tool: t.Name, Error: "native tool not served on /mcp: " + err.Error()})
			continue
		}
		defs = append(defs, d)
	}
	if name := as.b.readName(a); name != "" {
		if d, err := definition(toolcall.ReadResult, name); err == nil {
			defs = append(defs, d)
		}
	}
	digest, _ := json.Marshal(defs)
	if bytes.Equal(digest, as.digest) {
		return
	}
	if len(as.listed) > 0 {
		as.server.RemoveTools(as.listed...)
	}
	as.listed = as.listed[:0]
	for _, d := range defs {
		if err := addTool(as.server, d, as.handle); err != nil {
			as.b.rec.Emit(audit.Event{Type: audit.TypeManifestError, ClawID: as.id, Tool: d.Name, Error: "native tool not served on /mcp: " + err.Error()})
			continue
		}
		as.listed = append(as.listed, d.Name)
	}
	as.digest = digest
}

// addTool registers d, turning the SDK's panics on a definition it
// refuses into an error.
func addTool(s *mcp.Server, d *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s.AddTool(d, h)
	return nil
}

// canonicalNameMeta is the _meta key that carries a listed tool's
// canonical name ("<service>.<tool>").
const canonicalNameMeta = "io.clawdapus/canonical-name"

// definition is what an MCP client sees of t: the compiled definition,
// never its execution, listed as name (the provider-safe alias: runners
// hand MCP tool names to the model as they are, and providers refuse a
// dot), with the canonical name as its title (unless it has one) and in
// _meta.
func definition(t *manifest.Tool, name string) (*mcp.Tool, error) {
	in, err := objectSchema(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	d := &mcp.Tool{Name: name, Title: t.Name, Description: t.Description, InputSchema: in,
		Meta: mcp.Meta{canonicalNameMeta: t.Name}}
	if len(t.OutputSchema) > 0 {
		out, err := objectSchema(t.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("outputSchema: %w", err)
		}
		d.OutputSchema = out
	}
	if a := t.Annotations; a != nil {
		ro := a.IsReadOnly()
		d.Annotations = &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: ro, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint != nil && *a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
		if a.Title != "" {
			d.Title = a.Title
		}
	}
	return d, nil
}

// objectSchema is a compiled schema with "type": "object" made explicit,
// as MCP requires of tool schemas (a compiled schema may leave it out).
func objectSchema(raw json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	if _, ok := m["type"]; ok {
		return raw, nil
	}
	m["type"] = json.RawMessage(`"object"`)
	return json.Marshal(m)
}
