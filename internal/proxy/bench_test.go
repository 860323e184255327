package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/tracing"
)

// The benchmarks measure what cllama adds to a request: the same request
// is sent straight to a local fake provider ("direct") and through cllama
// ("proxy"), in one run. Latency percentiles, CPU time (user+sys of the
// whole test process: client, proxy and fake provider, so the proxy's own
// cost is the difference) and allocations are reported per request.
//
//	go test -run '^$' -bench . -benchmem ./internal/proxy/

var benchResponse = func() []byte {
	pad := strings.Repeat("lorem ipsum ", 70)
	return []byte(`{"id":"chatcmpl-b","object":"chat.completion","created":1,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":"` + pad + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":250,"completion_tokens":200,"total_tokens":450}}`)
}()

var benchStream = func() []byte {
	var b bytes.Buffer
	for range 20 {
		b.WriteString(`data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"gpt-fake","choices":[{"index":0,"delta":{"content":"token "},"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString(`data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"gpt-fake","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":250,"completion_tokens":20}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}()

// The same answer in the Responses API's shapes.
var benchResponsesBody = func() []byte {
	pad := strings.Repeat("lorem ipsum ", 70)
	return []byte(`{"id":"resp_b","object":"response","created_at":1,"status":"completed","model":"gpt-fake","output":[{"type":"message","id":"msg_b","status":"completed","role":"assistant","content":[{"type":"output_text","text":"` + pad + `","annotations":[]}]}],"usage":{"input_tokens":250,"input_tokens_details":{"cached_tokens":0},"output_tokens":200,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":450}}`)
}()

var benchResponsesStream = func() []byte {
	var b bytes.Buffer
	ev := func(typ, data string) { b.WriteString("event: " + typ + "\ndata: " + data + "\n\n") }
	ev("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_b","object":"response","status":"in_progress","model":"gpt-fake","output":[],"usage":null}}`)
	ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","id":"msg_b","status":"in_progress","role":"assistant","content":[]}}`)
	for i := range 20 {
		ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":`+strconv.Itoa(i+2)+`,"item_id":"msg_b","output_index":0,"content_index":0,"delta":"token "}`)
	}
	ev("response.completed", `{"type":"response.completed","sequence_number":22,"response":{"id":"resp_b","object":"response","status":"completed","model":"gpt-fake","output":[{"type":"message","id":"msg_b","status":"completed","role":"assistant","content":[{"type":"output_text","text":"token token","annotations":[]}]}],"usage":{"input_tokens":250,"output_tokens":20,"total_tokens":270}}}`)
	return b.Bytes()
}()

// benchResponsesRequest is benchRequest in the Responses API's shape.
func benchResponsesRequest(model string, stream bool) []byte {
	s := "false"
	if stream {
		s = "true"
	}
	pad := strings.Repeat("x", 1024-130)
	return []byte(`{"model":"` + model + `","stream":` + s + `,"temperature":0.2,"instructions":"be brief","input":[{"role":"user","content":"` + pad + `"}]}`)
}

// benchRequest is a ~1 KB chat request.
func benchRequest(model string, stream bool) []byte {
	s := "false"
	if stream {
		s = "true"
	}
	pad := strings.Repeat("x", 1024-130)
	return []byte(`{"model":"` + model + `","stream":` + s + `,"temperature":0.2,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"` + pad + `"}]}`)
}

// bigRequest is a ~200 KB chat request: one long user message, as a
// runner sends when it carries a long conversation or a document.
func bigRequest(model string, _ bool) []byte {
	pad := strings.Repeat("lorem ipsum dolor ", 200<<10/18)
	return []byte(`{"model":"` + model + `","stream":false,"messages":[{"role":"user","content":"` + pad + `"}]}`)
}

type benchRig struct {
	upstream, proxy string
	client          *http.Client
	srv             *Server
}

func newBenchRig(b *testing.B, history bool) *benchRig {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasSuffix(r.URL.Path, "/responses") {
			if bytes.Contains(body, []byte(`"stream":true`)) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(benchResponsesStream)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(benchResponsesBody)
			return
		}
		if bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(benchStream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(benchResponse)
	}))
	b.Cleanup(up.Close)
	dir := b.TempDir()
	root := filepath.Join(dir, "context")
	writeFileB(b, filepath.Join(root, "alice", "metadata.json"), `{"token":"`+aliceToken+`"}`)
	writeFileB(b, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"`+up.URL+`/v1","api_key":"k"}}}`)
	cfg := Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth")}
	if history {
		cfg.HistoryDir = filepath.Join(dir, "history")
	}
	rec, _ := openRecorder(b, cfg, io.Discard)
	srv, err := New(cfg, Options{Recorder: rec})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	front := httptest.NewServer(srv)
	b.Cleanup(front.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchRig{upstream: up.URL, proxy: front.URL, client: &http.Client{Transport: tr}, srv: srv}
}

func writeFileB(b *testing.B, path, content string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		b.Fatal(err)
	}
}

// do sends one request and drains the answer, returning its latency.
func (r *benchRig) do(b *testing.B, url string, body []byte) time.Duration {
	total, _ := r.doTTFB(b, url, body)
	return total
}

// doTTFB is do that also returns the time to the first body byte.
func (r *benchRig) doTTFB(b *testing.B, url string, body []byte) (total, ttfb time.Duration) {
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := r.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var one [1]byte
	_, _ = io.ReadFull(resp.Body, one[:])
	ttfb = time.Since(start)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
	return time.Since(start), ttfb
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

// BenchmarkPassthrough reports each path on its own: ns/op, allocs/op,
// p50/p99 latency and CPU per request.
func BenchmarkPassthrough(b *testing.B) {
	for _, kind := range []string{"json", "stream", "responses-json", "responses-stream"} {
		for _, path := range []string{"direct", "proxy", "proxy+history"} {
			b.Run(kind+"/"+path, func(b *testing.B) {
				rig := newBenchRig(b, path == "proxy+history")
				endpoint, request := "/v1/chat/completions", benchRequest
				if strings.HasPrefix(kind, "responses-") {
					endpoint, request = "/v1/responses", benchResponsesRequest
				}
				url, model := rig.upstream+endpoint, "gpt-fake"
				if path != "direct" {
					url, model = rig.proxy+endpoint, "fake/gpt-fake"
				}
				body := request(model, strings.HasSuffix(kind, "stream"))
				for range 50 { // warm the connection pools
					rig.do(b, url, body)
				}
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				cpu0 := cpuTime()
				b.ResetTimer()
				for b.Loop() {
					lat = append(lat, rig.do(b, url, body))
				}
				b.StopTimer()
				n := float64(len(lat))
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/n, "cpu-µs/op")
				b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
				b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
			})
		}
	}
}

// BenchmarkAddedLatency alternates direct and proxied requests in one loop,
// so both see the same machine noise, and reports the difference of their
// percentiles: the latency cllama adds.
func BenchmarkAddedLatency(b *testing.B) {
	for _, kind := range []string{"json", "stream"} {
		b.Run(kind, func(b *testing.B) {
			rig := newBenchRig(b, false)
			direct := benchRequest("gpt-fake", kind == "stream")
			proxied := benchRequest("fake/gpt-fake", kind == "stream")
			du, pu := rig.upstream+"/v1/chat/completions", rig.proxy+pathChat
			for range 50 {
				rig.do(b, du, direct)
				rig.do(b, pu, proxied)
			}
			var dl, pl, dt, pt []time.Duration
			b.ResetTimer()
			for b.Loop() {
				d, dtt := rig.doTTFB(b, du, direct)
				p, ptt := rig.doTTFB(b, pu, proxied)
				dl, pl, dt, pt = append(dl, d), append(pl, p), append(dt, dtt), append(pt, ptt)
			}
			b.StopTimer()
			if kind == "stream" {
				b.ReportMetric(float64((percentile(pt, 0.50) - percentile(dt, 0.50)).Microseconds()), "added-ttfb-p50-µs")
			}
			b.ReportMetric(float64(percentile(dl, 0.50).Microseconds()), "direct-p50-µs")
			b.ReportMetric(float64(percentile(pl, 0.50).Microseconds()), "proxy-p50-µs")
			b.ReportMetric(float64((percentile(pl, 0.50) - percentile(dl, 0.50)).Microseconds()), "added-p50-µs")
			b.ReportMetric(float64((percentile(pl, 0.99) - percentile(dl, 0.99)).Microseconds()), "added-p99-µs")
		})
	}
}

// BenchmarkHandlerOverhead calls the proxy's handler in-process (no
// runner-to-proxy network hop), alternating with direct requests, to show
// the proxy's own processing: edge checks, identity, routing, the upstream
// call through the pooled transport, relay and records.
func BenchmarkHandlerOverhead(b *testing.B) {
	for _, kind := range []string{"json", "stream"} {
		b.Run(kind, func(b *testing.B) {
			rig := newBenchRig(b, false)
			direct := benchRequest("gpt-fake", kind == "stream")
			proxied := benchRequest("fake/gpt-fake", kind == "stream")
			du := rig.upstream + "/v1/chat/completions"
			serve := func() time.Duration {
				start := time.Now()
				req := httptest.NewRequest(http.MethodPost, pathChat, bytes.NewReader(proxied))
				req.Header.Set("Authorization", "Bearer "+aliceToken)
				rec := httptest.NewRecorder()
				rig.srv.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d", rec.Code)
				}
				return time.Since(start)
			}
			for range 50 {
				rig.do(b, du, direct)
				serve()
			}
			var dl, hl []time.Duration
			b.ResetTimer()
			for b.Loop() {
				dl = append(dl, rig.do(b, du, direct))
				hl = append(hl, serve())
			}
			b.StopTimer()
			b.ReportMetric(float64(percentile(dl, 0.50).Microseconds()), "direct-p50-µs")
			b.ReportMetric(float64(percentile(hl, 0.50).Microseconds()), "handler-p50-µs")
			b.ReportMetric(float64((percentile(hl, 0.50) - percentile(dl, 0.50)).Microseconds()), "overhead-p50-µs")
			b.ReportMetric(float64((percentile(hl, 0.99) - percentile(dl, 0.99)).Microseconds()), "overhead-p99-µs")
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// discardWriter is a minimal ResponseWriter (with Flush) so the benchmark
// counts the proxy's allocations, not a recorder's.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// BenchmarkHandlerNoNetwork runs the handler against an in-memory provider:
// what remains is the proxy's own work (edge, identity, routing, rewrite,
// relay, usage, audit), with its allocations.
func BenchmarkHandlerNoNetwork(b *testing.B) {
	for _, kind := range []string{"json", "json+history", "stream", "stream+history", "200KB-json", "200KB-json+history"} {
		b.Run(kind, func(b *testing.B) {
			dir := b.TempDir()
			root := filepath.Join(dir, "context")
			writeFileB(b, filepath.Join(root, "alice", "metadata.json"), `{"token":"`+aliceToken+`"}`)
			writeFileB(b, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"http://fake.invalid/v1","api_key":"k"}}}`)
			cfg := Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth")}
			if strings.HasSuffix(kind, "+history") {
				cfg.HistoryDir = filepath.Join(dir, "history")
			}
			ct, payload := "application/json", benchResponse
			if strings.HasPrefix(kind, "stream") {
				ct, payload = "text/event-stream", benchStream
			}
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				// A RoundTripper closes the request body, as net/http's
				// does: that returns a pooled body buffer.
				_, _ = io.Copy(io.Discard, r.Body)
				_ = r.Body.Close()
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}},
					Body: io.NopCloser(bytes.NewReader(payload)), ContentLength: int64(len(payload)), Request: r}, nil
			})
			rec, _ := openRecorder(b, cfg, io.Discard)
			srv, err := New(cfg, Options{Recorder: rec, Transport: rt})
			if err != nil {
				b.Fatal(err)
			}
			body := benchRequest("fake/gpt-fake", strings.HasPrefix(kind, "stream"))
			if strings.HasPrefix(kind, "200KB") {
				body = bigRequest("fake/gpt-fake", false)
			}
			req := httptest.NewRequest(http.MethodPost, pathChat, nil)
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				req.Body = io.NopCloser(bytes.NewReader(body))
				req.ContentLength = int64(len(body))
				clear(w.h)
				srv.ServeHTTP(w, req)
			}
		})
	}
}

// BenchmarkTracingCost is BenchmarkHandlerNoNetwork's JSON request with
// tracing off and on (spans exported in batches to a discarding
// exporter), in one run: the difference is what traces cost a
// passthrough request.
func BenchmarkTracingCost(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "tracing=off", true: "tracing=on"}[on], func(b *testing.B) {
			if on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				tracing.Install(tp)
				defer func() { tracing.Uninstall(); _ = tp.Shutdown(context.Background()) }()
			}
			dir := b.TempDir()
			root := filepath.Join(dir, "context")
			writeFileB(b, filepath.Join(root, "alice", "metadata.json"), `{"token":"`+aliceToken+`"}`)
			writeFileB(b, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"http://fake.invalid/v1","api_key":"k"}}}`)
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				// A RoundTripper closes the request body, as net/http's
				// does: that returns a pooled body buffer.
				_, _ = io.Copy(io.Discard, r.Body)
				_ = r.Body.Close()
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(bytes.NewReader(benchResponse)), ContentLength: int64(len(benchResponse)), Request: r}, nil
			})
			srv, err := New(Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth")}, Options{Recorder: recorder.New(audit.New(io.Discard), nil), Transport: rt})
			if err != nil {
				b.Fatal(err)
			}
			body := benchRequest("fake/gpt-fake", false)
			req := httptest.NewRequest(http.MethodPost, pathChat, nil)
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				req.Body = io.NopCloser(bytes.NewReader(body))
				req.ContentLength = int64(len(body))
				clear(w.h)
				srv.ServeHTTP(w, req)
			}
		})
	}
}
