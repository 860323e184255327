package mcpstdio

import (
	"context"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The figures these print (calls/s, µs/call) go into the design note; they
// are never asserted. Run: go test -run '^$' -bench . ./internal/mcpstdio

var echoArgs = map[string]any{"text": "hello"}

// BenchmarkDirectStdio calls the echo server over the SDK's CommandTransport
// with no wrapper in between: the baseline for the wrapper's added latency.
func BenchmarkDirectStdio(b *testing.B) {
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.CommandContext(ctx, echoBin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for _, conc := range []int{1, 16} {
		b.Run(concName(conc), func(b *testing.B) { runCalls(b, conc, func() *mcp.ClientSession { return cs }) })
	}
}

// BenchmarkWrapper calls the same server through claw-mcp-stdio over
// Streamable HTTP. At concurrency 16 each goroutine has its own HTTP MCP
// session, as 16 independent agents' executors would.
func BenchmarkWrapper(b *testing.B) {
	cfg := fastConfig()
	cfg.CallTimeout = 30 * time.Second
	tw := startWrapper(b, cfg)
	sessions := make([]*mcp.ClientSession, 16)
	for i := range sessions {
		sessions[i] = connect(b, tw, "", nil)
	}
	for _, conc := range []int{1, 16} {
		b.Run(concName(conc), func(b *testing.B) {
			var next atomic.Int64
			runCalls(b, conc, func() *mcp.ClientSession { return sessions[next.Add(1)%16] })
		})
	}
}

func concName(c int) string {
	if c == 1 {
		return "conc=1"
	}
	return "conc=16"
}

// runCalls makes b.N echo calls spread over conc goroutines and reports
// throughput and mean latency per call.
func runCalls(b *testing.B, conc int, session func() *mcp.ClientSession) {
	ctx := context.Background()
	var (
		wg   sync.WaitGroup
		left atomic.Int64
		lat  atomic.Int64
	)
	left.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	for range conc {
		cs := session()
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				t0 := time.Now()
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs}); err != nil {
					b.Error(err)
					return
				}
				lat.Add(int64(time.Since(t0)))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(lat.Load())/float64(b.N)/1e3, "µs/call")
}
