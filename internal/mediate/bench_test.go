package mediate

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// The benchmarks measure the proxy's own cost: upstream answers come from
// memory and the Runner answers at once, so what is timed is parsing,
// continuity hashing, presentation, encoding, the loop and the response.

type instantRunner struct{}

func (instantRunner) Run(context.Context, toolexec.Call) toolexec.Envelope {
	return toolexec.Envelope{OK: true, Data: []byte(`{"balance":50000,"positions":[{"symbol":"ABC","qty":10}]}`)}
}

// transcript is a 200-message conversation.
func transcript(n int) []tmsg {
	var out []tmsg
	line := strings.Repeat("portfolio context and a question about positions ", 4)
	for i := 0; len(out) < n; i++ {
		out = append(out, tmsg{Role: "user", Text: fmt.Sprintf("%d: %s", i, line)})
		if len(out) < n {
			out = append(out, tmsg{Role: "assistant", Text: fmt.Sprintf("answer %d: %s", i, line)})
		}
	}
	return out
}

func benchMediate(b *testing.B, k kit, rounds int, stream, cold, batch bool) {
	schema := []byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	tools := &manifest.Tools{Version: 1, Policy: manifest.DefaultPolicy()}
	for i := range 8 {
		tools.Tools = append(tools.Tools, manifest.Tool{Name: fmt.Sprintf("svc.tool%d", i), Description: "a tool", InputSchema: schema,
			Execution: manifest.Execution{Transport: "http", Service: "svc", BaseURL: "http://svc", Method: "POST", Path: "/x"}})
	}
	agent := &agentctx.Agent{ID: "bench-0", Tools: tools}
	var script [][]byte
	for i := range rounds {
		script = append(script, k.upstreamResponse(step{Calls: []tcall{call(fmt.Sprintf("c%d", i), "svc__tool1", fmt.Sprintf(`{"q":"%d"}`, i))}, Usage: u(100, 10)}, i))
	}
	script = append(script, k.upstreamResponse(step{Text: strings.Repeat("final answer text ", 40), Usage: u(100, 50)}, rounds))
	body := k.runnerRequest(transcript(200), []string{"shell", "read_file", "write_file"}, stream, nil)
	o := Options{Runner: instantRunner{}}
	if batch { // a store read many keys at once, as the shared one is
		st, err := OpenStore(StoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		o.Continuity = &batchStore{Store: st}
	}
	m, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if cold { // a transcript never seen before: no memoised digests
			m.canon = newCanonCache(canonCacheSize)
		}
		n := 0
		x := &exchange.Exchange{ID: "r", Agent: agent, Format: k.format(), Model: "p/m", Stream: stream, Original: body, Body: body,
			Send: func(ctx context.Context, _ []byte) (*http.Response, error) {
				r := &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(script[n]))}
				n++
				return r, nil
			}}
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, k.path(), nil)
		m.Mediate(w, r, x)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	// CPU time is what the proxy spends; wall time on a shared machine
	// also measures its neighbours.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMediate reports the cost of a request with a 200-message
// transcript and 0, 1 and 4 hidden rounds; the per-round cost is the
// difference divided by the rounds. "cold" forgets the canonical-message
// memo each time, as for a transcript the proxy has never seen; "batch"
// reads continuity through GetMany, as from the store replicas share.
func BenchmarkMediate(b *testing.B) {
	for _, k := range kits {
		for _, stream := range []bool{false, true} {
			for _, rounds := range []int{0, 1, 4} {
				b.Run(fmt.Sprintf("%s/stream=%v/rounds=%d", k.format(), stream, rounds), func(b *testing.B) { benchMediate(b, k, rounds, stream, false, false) })
			}
		}
		b.Run(fmt.Sprintf("%s/cold/rounds=0", k.format()), func(b *testing.B) { benchMediate(b, k, 0, false, true, false) })
		b.Run(fmt.Sprintf("%s/batch/rounds=1", k.format()), func(b *testing.B) { benchMediate(b, k, 1, false, false, true) })
	}
}

// BenchmarkParallelRound times a turn whose one hidden round makes four
// calls to a service that takes 200 ms to answer: marked parallel-safe,
// then the same four calls not marked, in the same run, through the real
// executor over HTTP. The model's answers come from memory, so the wall
// time is the round's. It reports both (parallel-ms, serial-ms) and their
// ratio (speedup): about 200 ms against about 800 ms.
func BenchmarkParallelRound(b *testing.B) {
	const delay = 200 * time.Millisecond
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"price":190.5}`))
	}))
	defer svc.Close()
	ex := toolexec.New(toolexec.Options{})
	defer ex.Close()
	m, err := New(Options{Runner: ex})
	if err != nil {
		b.Fatal(err)
	}
	k := openaiKit{}
	var calls []tcall
	for i := range 4 {
		calls = append(calls, call(fmt.Sprintf("c%d", i), "svc__quote", fmt.Sprintf(`{"q":"%d"}`, i)))
	}
	script := [][]byte{k.upstreamResponse(step{Calls: calls, Usage: u(100, 10)}, 0), k.upstreamResponse(step{Text: "done", Usage: u(100, 5)}, 1)}
	body := k.runnerRequest(hello, nil, false, nil)
	agent := func(parallel bool) *agentctx.Agent {
		tools := &manifest.Tools{Version: 1, Policy: manifest.DefaultPolicy(), Tools: []manifest.Tool{{
			Name: "svc.quote", Description: "a quote", InputSchema: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`),
			Annotations: &manifest.Annotations{ParallelSafe: &parallel},
			Execution:   manifest.Execution{Transport: "http", Service: "svc", BaseURL: svc.URL, Method: "POST", Path: "/quote"},
		}}}
		return &agentctx.Agent{ID: "bench-0", Tools: tools}
	}
	turn := func(a *agentctx.Agent) time.Duration {
		n := 0
		x := &exchange.Exchange{ID: "r", Agent: a, Format: k.format(), Model: "p/m", Original: body, Body: body,
			Send: func(ctx context.Context, _ []byte) (*http.Response, error) {
				r := &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(script[n]))}
				n++
				return r, nil
			}}
		w := httptest.NewRecorder()
		start := time.Now()
		m.Mediate(w, httptest.NewRequest(http.MethodPost, k.path(), nil), x)
		d := time.Since(start)
		if w.Code != 200 || !strings.Contains(w.Body.String(), "done") {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
		return d
	}
	par, ser := agent(true), agent(false)
	turn(par) // connections warmed
	var parallel, serial time.Duration
	for b.Loop() {
		parallel += turn(par)
		serial += turn(ser)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(parallel), "parallel-ms")
	b.ReportMetric(ms(serial), "serial-ms")
	b.ReportMetric(float64(serial)/float64(parallel), "speedup")
}
