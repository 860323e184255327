package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The real binary exports its spans to an OTLP/HTTP receiver named by
// the standard environment, and flushes them on SIGTERM.
func TestBinaryExportsOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	var mu sync.Mutex
	var got []*collector.ExportTraceServiceRequest
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		var req collector.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		got = append(got, &req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer recv.Close()
	up := fakeProvider(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildCllama(ctx, t, dir)
	write(t, filepath.Join(dir, "context", "a", "metadata.json"), `{"token":"a:b"}`)
	p := startCllama(ctx, t, bin, "CLAW_CONTEXT_ROOT="+filepath.Join(dir, "context"), "CLAW_AUTH_DIR="+dir, "CLAW_POD=desk",
		"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+up.URL+"/v1",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_SERVICE_NAME=cllama-test")
	addr := p.addr
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(`{"model":"openai/gpt-test","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer a:b")
	req.Header.Set("Traceparent", runnerParent)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if rest, err := p.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, rest)
	}
	mu.Lock()
	defer mu.Unlock()
	var spans []string
	service := ""
	for _, r := range got {
		for _, rs := range r.ResourceSpans {
			for _, a := range rs.Resource.GetAttributes() {
				if a.Key == "service.name" {
					service = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans = append(spans, s.Name)
					if s.Name == "cllama POST /v1/chat/completions" && strings.TrimLeft(string(s.TraceId), "\x00") == "" {
						t.Error("empty trace id")
					}
				}
			}
		}
	}
	if service != "cllama-test" || !strings.Contains(strings.Join(spans, ","), "cllama POST /v1/chat/completions") || !strings.Contains(strings.Join(spans, ","), "chat gpt-test") {
		t.Fatalf("receiver got service %q, spans %v", service, spans)
	}
}
