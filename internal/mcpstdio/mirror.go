package mcpstdio

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mirror keeps the HTTP-facing server's tools, resources, resource templates
// and prompts equal to the child's, with handlers that forward to the child.
// Registering them on an SDK server (rather than intercepting methods) means
// the SDK does pagination, per-session initialisation and list_changed
// notifications to every HTTP session for us.
//
// Between a child's exit and its restart the last known lists stay in place,
// so clients do not see tools flap; calls in that window wait for the restart
// (bounded by Config.StartWait) and otherwise fail with CodeUnavailable.
type mirror struct {
	server *mcp.Server
	logger *slog.Logger
	// forward runs fn against the current child session with the wrapper's
	// timeout and error mapping (supervisor.forward).
	forward func(ctx context.Context, fn func(context.Context, *mcp.ClientSession) error) error

	mu        sync.Mutex // serialises syncs; the maps are guarded by it
	tools     map[string]string
	resources map[string]string
	templates map[string]string
	prompts   map[string]string
}

func newMirror(server *mcp.Server, logger *slog.Logger, forward func(context.Context, func(context.Context, *mcp.ClientSession) error) error) *mirror {
	return &mirror{
		server: server, logger: logger, forward: forward,
		tools: map[string]string{}, resources: map[string]string{},
		templates: map[string]string{}, prompts: map[string]string{},
	}
}

// sync lists everything the child offers and reconciles the server with it.
// It returns the number of tools now offered.
func (m *mirror) sync(ctx context.Context, sess *mcp.ClientSession) (int, error) {
	caps := &mcp.ServerCapabilities{}
	if ir := sess.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	var (
		tools     []*mcp.Tool
		resources []*mcp.Resource
		templates []*mcp.ResourceTemplate
		prompts   []*mcp.Prompt
		err       error
	)
	if caps.Tools != nil {
		if tools, err = collect(sess.Tools(ctx, nil)); err != nil {
			return 0, fmt.Errorf("tools/list: %w", err)
		}
	}
	if caps.Resources != nil {
		if resources, err = collect(sess.Resources(ctx, nil)); err != nil {
			return 0, fmt.Errorf("resources/list: %w", err)
		}
		if templates, err = collect(sess.ResourceTemplates(ctx, nil)); err != nil {
			// Templates are optional even for servers with resources.
			m.logger.Warn("child did not list resource templates", "err", err)
			templates = nil
		}
	}
	if caps.Prompts != nil {
		if prompts, err = collect(sess.Prompts(ctx, nil)); err != nil {
			return 0, fmt.Errorf("prompts/list: %w", err)
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	reconcile(m, m.tools, tools, func(t *mcp.Tool) string { return t.Name }, m.addTool, m.server.RemoveTools)
	reconcile(m, m.resources, resources, func(r *mcp.Resource) string { return r.URI }, m.addResource, m.server.RemoveResources)
	reconcile(m, m.templates, templates, func(t *mcp.ResourceTemplate) string { return t.URITemplate }, m.addTemplate, m.server.RemoveResourceTemplates)
	reconcile(m, m.prompts, prompts, func(p *mcp.Prompt) string { return p.Name }, m.addPrompt, m.server.RemovePrompts)
	return len(m.tools), nil
}

func collect[T any](seq func(func(*T, error) bool)) ([]*T, error) {
	var out []*T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// reconcile makes have (key -> JSON of the registered item) match want,
// adding new or changed items and removing vanished ones. An item the SDK
// refuses (it panics on, e.g., a non-object input schema) is skipped and
// logged: one bad tool must not take the other tools down with it.
func reconcile[T any](m *mirror, have map[string]string, want []T, key func(T) string, add func(T), remove func(...string)) {
	seen := make(map[string]bool, len(want))
	for _, item := range want {
		k := key(item)
		if seen[k] {
			continue
		}
		seen[k] = true
		b, err := json.Marshal(item)
		if err != nil {
			m.logger.Warn("skipping child item that does not marshal", "key", k, "err", err)
			continue
		}
		if have[k] == string(b) {
			continue
		}
		if err := safely(func() { add(item) }); err != nil {
			m.logger.Warn("skipping child item the MCP server refused", "key", k, "err", err)
			continue
		}
		have[k] = string(b)
	}
	var gone []string
	for k := range have {
		if !seen[k] {
			gone = append(gone, k)
			delete(have, k)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
}

func safely(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

func (m *mirror) addTool(t *mcp.Tool) {
	// The SDK requires an object input schema; say so plainly instead of
	// relying on its panic message.
	var schema struct {
		Type any `json:"type"`
	}
	b, _ := json.Marshal(t.InputSchema)
	if err := json.Unmarshal(b, &schema); err != nil || schema.Type != "object" {
		panic(fmt.Sprintf("tool %q: inputSchema must be a JSON object schema with type \"object\"", t.Name))
	}
	m.server.AddTool(t, m.callTool)
}

func (m *mirror) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := m.forward(ctx, func(ctx context.Context, sess *mcp.ClientSession) (err error) {
		res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		return err
	})
	return res, err
}

func (m *mirror) addResource(r *mcp.Resource) { m.server.AddResource(r, m.readResource) }

func (m *mirror) addTemplate(t *mcp.ResourceTemplate) {
	m.server.AddResourceTemplate(t, m.readResource)
}

func (m *mirror) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	err := m.forward(ctx, func(ctx context.Context, sess *mcp.ClientSession) (err error) {
		res, err = sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.Params.URI})
		return err
	})
	return res, err
}

func (m *mirror) addPrompt(p *mcp.Prompt) { m.server.AddPrompt(p, m.getPrompt) }

func (m *mirror) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	var res *mcp.GetPromptResult
	err := m.forward(ctx, func(ctx context.Context, sess *mcp.ClientSession) (err error) {
		res, err = sess.GetPrompt(ctx, &mcp.GetPromptParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		return err
	})
	return res, err
}
