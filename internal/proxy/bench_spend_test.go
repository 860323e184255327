package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/recorder"
)

// BenchmarkMeteringCost is what metering costs a passthrough request: the
// handler against an in-memory provider (BenchmarkHandlerNoNetwork's JSON
// request), for an agent with no budget, with a USD budget per day kept in
// memory (no state directory: metering alone), the same kept in the file
// ledger (the settlement written and fsync'ed as the request ends), and
// with a requests budget per conversation besides
// (the conversation's key computed from the transcript). The variants
// alternate in blocks in one loop, so all see the same machine; the medians and
// their ratios to the unbudgeted request are reported, both until the
// answer was flushed to the runner ("answered": what the runner waits
// for) and until the handler returned ("handler": the settlement's fsync
// included).
//
//	go test -run '^$' -bench MeteringCost ./internal/proxy/
func BenchmarkMeteringCost(b *testing.B) {
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		_, _ = io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(benchResponse)), ContentLength: int64(len(benchResponse)), Request: r}, nil
	})
	usd := manifest.Budget{Unit: manifest.BudgetUSD, Limit: 1_000_000_000_000, Per: "day"}
	variants := []struct {
		name    string
		budgets []manifest.Budget
		memory  bool // no state directory: the ledger in memory
	}{
		{"none", nil, false},
		{"usd-memory", []manifest.Budget{usd}, true},
		{"usd", []manifest.Budget{usd}, false},
		{"usd+conversation", []manifest.Budget{usd, {Unit: manifest.BudgetRequests, Limit: 1 << 40, Per: "conversation"}}, false},
	}
	serve := make([]func() (answered, handled time.Duration), len(variants))
	for i, v := range variants {
		bs := v.budgets
		dir := b.TempDir()
		root := filepath.Join(dir, "context")
		md, _ := json.Marshal(manifest.Metadata{Token: aliceToken, Budget: bs})
		writeFileB(b, filepath.Join(root, "alice", "metadata.json"), string(md))
		writeFileB(b, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"http://fake.invalid/v1","api_key":"k"}}}`)
		cfg := Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth"), StateDir: filepath.Join(dir, "state")}
		if v.memory {
			cfg.StateDir = ""
		}
		srv, err := New(cfg,
			Options{Recorder: recorder.New(audit.New(io.Discard), nil), Transport: rt, Spend: SpendOptions{Pricing: map[string]manifest.Price{
				"fake/gpt-fake": {Input: 2_500_000, Output: 10_000_000}}}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = srv.Close() })
		body := benchRequest("fake/gpt-fake", false)
		req := httptest.NewRequest(http.MethodPost, pathChat, nil)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		w := &flushTimer{discardWriter: discardWriter{h: http.Header{}}}
		serve[i] = func() (answered, handled time.Duration) {
			start := time.Now()
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.ContentLength = int64(len(body))
			clear(w.h)
			w.flushed = time.Time{}
			srv.ServeHTTP(w, req)
			end := time.Now()
			if w.flushed.IsZero() {
				w.flushed = end
			}
			return w.flushed.Sub(start), end.Sub(start)
		}
	}
	for range 50 {
		for _, s := range serve {
			s()
		}
	}
	answered := make([][]time.Duration, len(serve))
	handled := make([][]time.Duration, len(serve))
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		// Blocks of each variant in turn: a request right after another
		// variant's fsync would meet the filesystem's journal commit
		// running beside it, and be measured slower than it is.
		i := n / benchBlock % len(serve)
		a, h := serve[i]()
		answered[i], handled[i] = append(answered[i], a), append(handled[i], h)
	}
	b.StopTimer()
	median := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Nanoseconds())
	}
	for i, v := range variants {
		a, h := median(answered[i]), median(handled[i])
		name := v.name
		b.ReportMetric(a, name+"-answered-p50-ns")
		b.ReportMetric(h, name+"-handler-p50-ns")
		if i > 0 {
			b.ReportMetric(a/median(answered[0]), name+"/none-answered")
			b.ReportMetric(h/median(handled[0]), name+"/none-handler")
		}
	}
}

// benchBlock is how many requests of one variant run in a row.
const benchBlock = 100

// flushTimer notes when the handler flushed the answer to the runner:
// what the runner waits for, before the handler's own bookkeeping.
type flushTimer struct {
	discardWriter
	flushed time.Time
}

func (f *flushTimer) Flush() {
	if f.flushed.IsZero() {
		f.flushed = time.Now()
	}
}
