package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/histindex"
	"github.com/clawdapus/clawgo/internal/history"
)

// Sizes of the large history: CONSOLE_BENCH_ENTRIES overrides the count.
const (
	benchAgents  = 50
	benchEntries = 1_000_000
	benchSpan    = 7 * 24 * time.Hour
)

// writeLargeHistory writes n entries across benchAgents agents, spread
// over benchSpan up to now, one in three with a hidden round of tool calls
// (one in ten of those failing), each with a cost.
func writeLargeHistory(b *testing.B, dir string, n int, now time.Time) {
	b.Helper()
	ws := make([]*bufio.Writer, benchAgents)
	for a := range benchAgents {
		p := filepath.Join(dir, fmt.Sprintf("agent-%02d", a), history.FileName)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		ws[a] = bufio.NewWriterSize(f, 1<<20)
		defer ws[a].Flush()
	}
	step := benchSpan / time.Duration(n)
	start := now.Add(-benchSpan)
	var line []byte
	for i := range n {
		a := i % benchAgents
		ts := start.Add(time.Duration(i) * step).UTC().Format(time.RFC3339Nano)
		line = fmt.Appendf(line[:0], `{"id":"h_%08d","timestamp":%q,"agent_id":"agent-%02d","format":"openai","model":"fake/m%d","status":"ok","status_code":200,"latency_ms":%d,`+
			`"request":{"model":"fake/m","messages":[{"role":"user","content":"question %d"}]},"response":{"choices":[{"message":{"role":"assistant","content":"answer %d"}}]},`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_rounds":1}`, i, ts, a, i%3, 100+i%900, i, i, 200+i%50, 30+i%20)
		if i%3 == 0 {
			result := `{"ok":true,"data":{"price":10}}`
			if i%30 == 0 {
				result = `{"ok":false,"error":{"code":"upstream_error","message":"desk said 503"}}`
			}
			line = fmt.Appendf(line, `,"tool_trace":[{"round":1,"tool_calls":[{"name":"svc%d.tool%d","arguments":{"s":"X"},"result":%s,"start_ms":0,"latency_ms":%d,"service":"svc%d","mode":"mediated"}],"round_usage":{"prompt_tokens":100,"completion_tokens":10}}]`,
				i%5, i%4, result, 5+i%200, i%5)
		}
		line = fmt.Appendf(line, `,"cost_usd":0.00%04d}`+"\n", 1+i%5000)
		if _, err := ws[a].Write(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConsolePages renders every page against a history of 1,000,000
// entries across 50 agents and prints each page's p50 and p95, beside the
// login page (no history read) as the baseline of the same run.
func BenchmarkConsolePages(b *testing.B) {
	n := benchEntries
	if s := os.Getenv("CONSOLE_BENCH_ENTRIES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dir := b.TempDir()
	now := time.Now().UTC()
	t0 := time.Now()
	writeLargeHistory(b, dir, n, now)
	wrote := time.Since(t0)
	dbPath := filepath.Join(b.TempDir(), "index.db")
	x, err := histindex.Open(histindex.Options{HistoryDir: dir, Path: dbPath})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	t0 = time.Now()
	cpu0 := cpuTime()
	st, err := x.Sync(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	built, builtCPU := time.Since(t0), cpuTime()-cpu0
	var histBytes int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, _ error) error {
		if fi != nil && !fi.IsDir() {
			histBytes += fi.Size()
		}
		return nil
	})
	fmt.Printf("console bench: %d entries across %d agents, history %d MiB written in %s; index built in %s (%s of CPU), %d MiB on disk (%d bytes per entry)\n",
		st.Entries, benchAgents, histBytes>>20, wrote.Round(time.Millisecond), built.Round(time.Millisecond), builtCPU.Round(time.Millisecond), x.Size()>>20, x.Size()/int64(max(st.Entries, 1)))

	agents := staticAgents{}
	for a := range benchAgents {
		id := fmt.Sprintf("agent-%02d", a)
		agents[id] = AgentInfo{ID: id, Service: id, Tools: []ToolGrant{{Name: "svc1.tool1", Mode: "mediated"}},
			Feeds: []FeedInfo{{Name: "news", Source: "svc1", Path: "/news", TTL: 60}}}
	}
	c, err := New(Options{Pod: "bench", Index: x, Agents: agents, Approvals: &fakeApprovals{decided: map[string]bool{}},
		VerifyToken: func(tok string) bool { return tok == operatorToken }})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	mux := testMux{http.NewServeMux()}
	c.Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r := &rig{srv: srv, console: c}
	cl := client()
	if _, csrf := r.login(b, cl, operatorToken); csrf == "" {
		b.Fatal("login failed")
	}
	pages := []struct{ name, path string }{
		{"login(baseline)", "/login"},
		{"agents", "/"},
		{"agent", "/agents/agent-07"},
		{"turn", fmt.Sprintf("/turns/h_%08d", n/2)},
		{"tools", "/tools"},
		{"approvals", "/approvals"},
		{"feeds", "/feeds"},
		{"chart-requests", "/charts/requests.svg"},
		{"chart-requests-agent", "/charts/requests.svg?agent=agent-07"},
		{"chart-spend", "/charts/spend.svg"},
	}
	var base float64
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t := time.Now()
				resp, err := cl.Get(srv.URL + p.path)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("%s: %d", p.path, resp.StatusCode)
				}
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			p50 := float64(lat[len(lat)/2].Microseconds()) / 1000
			p95 := float64(lat[(len(lat)*95+99)/100-1].Microseconds()) / 1000
			b.ReportMetric(p50, "p50-ms")
			b.ReportMetric(p95, "p95-ms")
			if base == 0 {
				base = p50
			}
			b.ReportMetric(p50/max(base, 0.001), "x-baseline")
		})
	}
}

// cpuTime is the CPU this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
