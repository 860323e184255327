package mcpstdio

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCrashFailsEveryCallInFlight(t *testing.T) {
	tw := startWrapper(t, fastConfig("-faults"))
	cs := connect(t, tw, "", nil)
	ctx := callCtx(t)

	const n = 8
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 20000}})
			errs <- err
		})
	}
	// Wait until all slow calls reached the child before crashing it.
	deadline := time.Now().Add(5 * time.Second)
	for tw.Health().InFlight < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash"}); rpcCode(err) != CodeUnavailable {
		t.Fatalf("crash call: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if rpcCode(err) != CodeUnavailable {
			t.Errorf("in-flight call ended with %v (code %d), want %d", err, rpcCode(err), CodeUnavailable)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("in-flight calls took %v to fail", d)
	}
}

func TestShutdownLetsCallsInFlightFinish(t *testing.T) {
	tw := startWrapper(t, fastConfig())
	cs := connect(t, tw, "", nil)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 400}})
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for tw.Health().InFlight < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	tw.Shutdown(t)
	if err := <-done; err != nil {
		t.Fatalf("call in flight at shutdown failed: %v", err)
	}
}
