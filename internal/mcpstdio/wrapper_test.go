package mcpstdio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolsListedAndCalled(t *testing.T) {
	tw := startWrapper(t, fastConfig())
	cs := connect(t, tw, "", nil)
	ctx := callCtx(t)

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"add", "echo", "lookup_symbol", "slow"}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}

	got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup_symbol", Arguments: map[string]any{"symbol": "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	type quote struct {
		Symbol string
		Price  float64
	}
	if q := structured[quote](t, got); q.Symbol != "ACME" || q.Price != 123.45 {
		t.Fatalf("lookup_symbol = %+v", q)
	}

	// A tool error from the child stays a tool error (isError), not a
	// protocol error.
	got, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup_symbol", Arguments: map[string]any{"symbol": "NOPE"}})
	if err != nil || !got.IsError {
		t.Fatalf("unknown symbol: err=%v isError=%v", err, got != nil && got.IsError)
	}

	// Invalid arguments are refused by the child, and that answer is
	// passed through as the child gave it.
	got, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": "one"}})
	if err == nil && !got.IsError {
		t.Fatal("add with a string argument succeeded")
	}
	// An unknown tool is the server's invalid-params error.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope"})
	if rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: %v (code %d)", err, rpcCode(err))
	}
}

func TestResourcesAndPromptsForwarded(t *testing.T) {
	tw := startWrapper(t, fastConfig())
	cs := connect(t, tw, "", nil)
	ctx := callCtx(t)

	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "echo://about"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "deterministic") {
		t.Fatalf("resource = %+v", rr.Contents)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := pr.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Hello, Ada!" {
		t.Fatalf("prompt = %+v", pr.Messages[0].Content)
	}
}

func TestManyConcurrentClients(t *testing.T) {
	tw := startWrapper(t, fastConfig())
	const clients, calls = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			cs, err := dial(tw, "", nil)
			if err != nil {
				errs <- err
				return
			}
			defer cs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for i := range calls {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": c, "b": i}})
				if err != nil {
					errs <- err
					return
				}
				if s := structured[struct{ Sum float64 }](t, res).Sum; s != float64(c+i) {
					errs <- fmt.Errorf("client %d call %d: sum %v", c, i, s)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if h := tw.health(t); h.Restarts != 0 {
		t.Errorf("child restarted %d times under load", h.Restarts)
	}
}

// rpcCode returns the JSON-RPC error code inside err, or 0.
func rpcCode(err error) int64 {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr.Code
	}
	return 0
}

func TestChildCrashMidCall(t *testing.T) {
	tw := startWrapper(t, fastConfig("-faults"))
	cs := connect(t, tw, "", nil)
	ctx := callCtx(t)
	before := tw.waitStatus(t, StatusUp)

	start := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash"})
	if err == nil {
		t.Fatal("call to a crashing child succeeded")
	}
	if rpcCode(err) != CodeUnavailable || !strings.Contains(err.Error(), "exited with status 3") {
		t.Fatalf("crash error = %v (code %d), want code %d naming the exit", err, rpcCode(err), CodeUnavailable)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("crash took %v to surface", d)
	}

	// The same HTTP session keeps working once the child is back.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}})
	if err != nil {
		t.Fatalf("call after restart: %v", err)
	}
	if got := structured[struct{ Text string }](t, res).Text; got != "again" {
		t.Fatalf("echo = %q", got)
	}
	after := tw.waitStatus(t, StatusUp)
	if after.Restarts < 1 || after.PID == before.PID {
		t.Fatalf("health after crash = %+v (before %+v)", after, before)
	}
	if !strings.Contains(after.LastExit, "status 3") && !strings.Contains(tw.Logs.String(), "exited with status 3") {
		t.Errorf("exit not reported; health %+v", after)
	}
}

func TestGarbageOnStdoutRestartsChild(t *testing.T) {
	tw := startWrapper(t, fastConfig("-faults"))
	cs := connect(t, tw, "", nil)
	ctx := callCtx(t)
	before := tw.waitStatus(t, StatusUp)

	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "garbage"})
	if rpcCode(err) != CodeUnavailable || !strings.Contains(err.Error(), "protocol failure") {
		t.Fatalf("garbage error = %v (code %d)", err, rpcCode(err))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ok"}})
	if err != nil || res.IsError {
		t.Fatalf("call after garbage: %v", err)
	}
	after := tw.waitStatus(t, StatusUp)
	if after.Restarts < 1 || after.PID == before.PID {
		t.Fatalf("child not restarted: %+v", after)
	}
	if !strings.Contains(tw.Logs.String(), "protocol failure") {
		t.Error("protocol failure not logged")
	}
}

func TestGarbageAtStartIsReportedNotFatal(t *testing.T) {
	cfg := fastConfig("-garbage-at-start")
	cfg.StartWait = 300 * time.Millisecond
	tw := startWrapper(t, cfg)

	deadline := time.Now().Add(10 * time.Second)
	var h Health
	for time.Now().Before(deadline) {
		if h = tw.health(t); h.Restarts >= 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h.Restarts < 2 || h.Status == StatusUp || h.LastError == "" {
		t.Fatalf("health = %+v, want repeated restarts with an error", h)
	}
	// The HTTP side still answers, and a call fails clearly and promptly.
	cs := connect(t, tw, "", nil)
	start := time.Now()
	_, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err == nil {
		t.Fatal("call succeeded against a broken child")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("failing call took %v", d)
	}
}

func TestCallTimeout(t *testing.T) {
	cfg := fastConfig()
	cfg.CallTimeout = 300 * time.Millisecond
	tw := startWrapper(t, cfg)
	cs := connect(t, tw, "", nil)

	_, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 5000}})
	if rpcCode(err) != CodeTimeout {
		t.Fatalf("slow call error = %v (code %d), want %d", err, rpcCode(err), CodeTimeout)
	}
	// A timeout is not a child failure.
	if h := tw.health(t); h.Status != StatusUp || h.Restarts != 0 {
		t.Fatalf("health after timeout = %+v", h)
	}
}

func TestToolListChangedPropagates(t *testing.T) {
	tw := startWrapper(t, fastConfig("-faults"))
	changed := make(chan struct{}, 8)
	cs := connect(t, tw, "", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx := callCtx(t)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "late_echo"}}); err != nil {
		t.Fatal(err)
	}
	// Notifications are debounced and may also stem from the initial
	// listing, so wait until one is followed by a list with the new tool.
	for found := false; !found; {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("late_echo never appeared after tools/list_changed")
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		found = slices.ContainsFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "late_echo" })
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "late_echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := structured[struct{ Text string }](t, res).Text; got != "hi" {
		t.Fatalf("late_echo = %q", got)
	}
}

func TestStderrLoggedLineByLine(t *testing.T) {
	tw := startWrapper(t, fastConfig())
	tw.waitStatus(t, StatusUp)
	if logs := tw.Logs.String(); !strings.Contains(logs, `msg="child stderr: claw-mcp-echo: serving on stdio`) {
		t.Fatalf("child stderr not logged:\n%s", logs)
	}
}

func TestShutdownStopsChild(t *testing.T) {
	tw := startWrapper(t, fastConfig())
	cs := connect(t, tw, "", nil)
	pid := tw.waitStatus(t, StatusUp).PID
	if !processAlive(pid) {
		t.Fatalf("child %d not running", pid)
	}
	start := time.Now()
	tw.Shutdown(t)
	if processAlive(pid) {
		t.Fatalf("child %d still running after shutdown", pid)
	}
	// The child honours stdin EOF, so no signal should have been needed.
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	if !strings.Contains(tw.Logs.String(), "exited with status 0") {
		t.Errorf("child did not exit cleanly:\n%s", tw.Logs.String())
	}
	if tw.Health().Status != StatusStopped {
		t.Errorf("status after shutdown = %q", tw.Health().Status)
	}
	// And the client sees the endpoint gone rather than hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err == nil {
		t.Error("list after shutdown succeeded")
	}
}
