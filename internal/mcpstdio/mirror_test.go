package mcpstdio

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestReconcileSkipsToolsTheSDKRefuses(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	m := newMirror(server, slog.New(slog.DiscardHandler), nil)
	tools := []*mcp.Tool{
		{Name: "string_schema", InputSchema: map[string]any{"type": "string"}},
		{Name: "no_schema"},
		{Name: "fine", InputSchema: map[string]any{"type": "object"}},
		{Name: "fine", InputSchema: map[string]any{"type": "object"}}, // duplicate
	}
	reconcile(m, m.tools, tools, func(t *mcp.Tool) string { return t.Name }, m.addTool, server.RemoveTools)
	if len(m.tools) != 1 || m.tools["fine"] == "" {
		t.Fatalf("registered %v", m.tools)
	}
	// Removing: a second listing without the tool drops it.
	reconcile(m, m.tools, nil, func(t *mcp.Tool) string { return t.Name }, m.addTool, server.RemoveTools)
	if len(m.tools) != 0 {
		t.Fatalf("left %v", m.tools)
	}
}

func TestRestartRefreshesToolList(t *testing.T) {
	tw := startWrapper(t, fastConfig("-faults"))
	cs := connect(t, tw, "", nil)
	ctx := callCtx(t)
	names := func() []string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "ephemeral"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return slices.Contains(names(), "ephemeral") })
	// The restarted child never heard of it: the wrapper must drop it.
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash"})
	waitFor(t, func() bool { return !slices.Contains(names(), "ephemeral") })
	if h := tw.waitStatus(t, StatusUp); h.Tools != 7 {
		t.Fatalf("tools after restart = %d", h.Tools)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition never held")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
