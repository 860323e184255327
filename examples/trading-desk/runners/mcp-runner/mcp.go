package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectWait bounds how long the runner waits for an MCP server at start:
// the runner may start before cllama is listening.
const connectWait = 30 * time.Second

// mcpTool is one tool an MCP server listed, with the name the model sees.
type mcpTool struct {
	Server    string
	Tool      *mcp.Tool
	ModelName string
	session   *mcp.ClientSession
}

// Canonical is the tool's pod name ("<service>.<tool>"): cllama lists a
// tool under a name every model provider accepts and gives its canonical
// name in _meta; other servers' names are their own.
func (t *mcpTool) Canonical() string {
	if n, ok := t.Tool.Meta["io.clawdapus/canonical-name"].(string); ok && n != "" {
		return n
	}
	return t.Tool.Name
}

// toolbox is every MCP session the runner holds and the tools they offer.
type toolbox struct {
	tools    []*mcpTool
	names    *toolNames
	byRef    map[toolRef]*mcpTool
	sessions []*mcp.ClientSession
}

// headerTransport adds the configured headers (the agent's bearer) to
// every request of an MCP session.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// openToolbox connects to every server, waiting up to wait for each to
// come up, and lists its tools. reserved names (the runner's own tools)
// are never given to an MCP tool.
func openToolbox(ctx context.Context, servers []server, wait time.Duration, reserved ...string) (*toolbox, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-runner", Version: "0.1.0"}, nil)
	tb := &toolbox{names: newToolNames(reserved...), byRef: map[toolRef]*mcpTool{}}
	for _, s := range servers {
		cs, err := connect(ctx, client, s, wait)
		if err != nil {
			tb.Close()
			return nil, err
		}
		tb.sessions = append(tb.sessions, cs)
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				tb.Close()
				return nil, fmt.Errorf("MCP server %s (%s): listing tools: %w", s.Name, s.URL, err)
			}
			t := &mcpTool{Server: s.Name, Tool: tool, ModelName: tb.names.assign(s.Name, tool.Name), session: cs}
			tb.tools = append(tb.tools, t)
			tb.byRef[toolRef{Server: s.Name, Name: tool.Name}] = t
		}
	}
	return tb, nil
}

// connect opens a session with s, retrying while the server cannot be
// reached until wait has passed. Any other failure (401, a protocol
// error) is final at once.
func connect(ctx context.Context, client *mcp.Client, s server, wait time.Duration) (*mcp.ClientSession, error) {
	transport := &mcp.StreamableClientTransport{
		Endpoint:   s.URL,
		HTTPClient: &http.Client{Transport: &headerTransport{base: http.DefaultTransport, headers: s.Headers}},
		// The runner only needs answers to its own calls: no standing
		// GET stream for server-initiated messages.
		DisableStandaloneSSE: true,
	}
	deadline := time.Now().Add(wait)
	for {
		cs, err := client.Connect(ctx, transport, nil)
		if err == nil {
			return cs, nil
		}
		if !unreachable(err) {
			hint := ""
			if strings.Contains(err.Error(), "Unauthorized") {
				hint = " (is the bearer in its headers, or CLAW_MCP_TOKEN, this agent's token?)"
			}
			return nil, fmt.Errorf("MCP server %s (%s): %w%s", s.Name, s.URL, err, hint)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("MCP server %s (%s) could not be reached for %s: %w", s.Name, s.URL, wait, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// unreachable reports whether err means nothing answered: the server is
// not (yet) listening or its name does not resolve yet.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

// call runs a tool over MCP. argsJSON is the model's arguments; the result
// is the text sent back to the model and whether it is an error.
func (t *mcpTool) call(ctx context.Context, argsJSON string) (string, bool) {
	args := map[string]any{}
	if strings.TrimSpace(argsJSON) != "" {
		if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
			return fmt.Sprintf("error: the arguments are not a JSON object: %v", err), true
		}
	}
	res, err := t.session.CallTool(ctx, &mcp.CallToolParams{Name: t.Tool.Name, Arguments: args})
	if err != nil {
		return fmt.Sprintf("error: the MCP call failed: %v", err), true
	}
	text := resultText(res)
	if res.IsError {
		return "error: " + text, true
	}
	return text, false
}

// resultText is what the model gets from a tools/call result: the text
// blocks joined with newlines, else the structured content as JSON.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	other := 0
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		} else {
			other++
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("(%d non-text content blocks left out)", other))
	}
	if len(parts) == 0 {
		return "(no content)"
	}
	return strings.Join(parts, "\n")
}

// find returns the MCP tool the model calls by modelName, if any.
func (tb *toolbox) find(modelName string) (*mcpTool, bool) {
	ref, ok := tb.names.lookup(modelName)
	if !ok {
		return nil, false
	}
	t, ok := tb.byRef[ref]
	return t, ok
}

// Close ends every session.
func (tb *toolbox) Close() {
	for _, cs := range tb.sessions {
		_ = cs.Close()
	}
	tb.sessions = nil
}
