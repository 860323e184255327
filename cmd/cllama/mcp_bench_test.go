package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPBrokerVsDirect measures what native mode costs: a
// tools/call through cllama's /mcp (authentication, the broker, schema
// validation, the executor, audit and history) against the same service
// request made directly, in one run so both see the same machine. It
// reports each path's median latency, the median added by the broker,
// and the CPU time per call of this process (cllama, the client and the
// service all run in it: the CPU difference is cllama's share).
func BenchmarkMCPBrokerVsDirect(b *testing.B) {
	p := startMCPPod(b)
	direct := &http.Client{}
	url := p.svc.srv.URL + "/context/analyst?symbol=NVDA"
	callDirect := func() {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer projected-for-analyst")
		res, err := direct.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	cs := p.connect(b, "analyst:s3cret", "2025-11-25")
	params := &mcp.CallToolParams{Name: "desk.get_context", Arguments: map[string]any{"symbol": "NVDA"}}
	callBroker := func() {
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			b.Fatalf("%+v %v", res, err)
		}
	}
	// Warm both paths (connections, the schema cache).
	for range 20 {
		callDirect()
		callBroker()
	}
	measure := func(call func()) (p50 time.Duration, cpu time.Duration) {
		lat := make([]time.Duration, 0, b.N)
		cpu0 := processCPU()
		for range b.N {
			t0 := time.Now()
			call()
			lat = append(lat, time.Since(t0))
		}
		cpu = (processCPU() - cpu0) / time.Duration(b.N)
		slices.Sort(lat)
		return lat[len(lat)/2], cpu
	}
	b.ResetTimer()
	dp50, dcpu := measure(callDirect)
	bp50, bcpu := measure(callBroker)
	b.StopTimer()
	b.ReportMetric(float64(dp50.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(bp50.Microseconds()), "broker-p50-µs")
	b.ReportMetric(float64((bp50 - dp50).Microseconds()), "added-p50-µs")
	b.ReportMetric(float64(dcpu.Microseconds()), "direct-cpu-µs/call")
	b.ReportMetric(float64(bcpu.Microseconds()), "broker-cpu-µs/call")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
