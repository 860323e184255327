package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/clawdapus/clawgo/internal/tracing"
)

const (
	runnerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	runnerParent = "00-" + runnerTrace + "-00f067aa0ba902b7-01"
)

// Traces: the runner's trace id is kept; the request span holds the
// upstream call, the rounds and the tool calls; the provider and the tool
// service get a traceparent of the same trace; no attribute holds a
// secret or a service address.
func TestTracesFollowTheAgentsRequest(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tracing.Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	t.Cleanup(tracing.Uninstall)

	var mu sync.Mutex
	var providerSaw []string
	inner := fakeProvider(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		providerSaw = append(providerSaw, r.Header.Get("Traceparent"))
		mu.Unlock()
		req, _ := http.NewRequest(r.Method, inner.URL+r.URL.Path, r.Body)
		req.Header = r.Header.Clone()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, res.Body)
	}))
	t.Cleanup(up.Close)
	p := startMCPPod(t, "OPENAI_BASE_URL="+up.URL+"/v1")
	chat := func(token string) {
		req, _ := http.NewRequest(http.MethodPost, p.base+"/v1/chat/completions", strings.NewReader(`{"model":"openai/gpt-test","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Traceparent", runnerParent)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	chat("plain:other")    // passthrough
	chat("analyst:s3cret") // mediated: desk.trade runs, desk__nope is unknown
	cs := p.connect(t, "analyst:s3cret", "")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "desk.get_context", Arguments: map[string]any{"symbol": "X"}}); err != nil {
		t.Fatal(err)
	}

	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		for _, a := range s.Attributes {
			v := a.Value.Emit()
			for _, secret := range []string{"s3cret", "other", "sk-unused", "projected-for-analyst", p.svc.srv.URL, up.URL} {
				if secret != "other" && strings.Contains(v, secret) || secret == "other" && v == "plain:other" {
					t.Errorf("span %s attribute %s holds %q", s.Name, a.Key, v)
				}
			}
		}
	}
	requests := byName["cllama POST /v1/chat/completions"]
	if len(requests) != 2 {
		t.Fatalf("request spans: %d; all spans: %v", len(requests), names(spans))
	}
	for _, r := range requests {
		if r.SpanContext.TraceID().String() != runnerTrace {
			t.Errorf("request span trace %s, want the runner's %s", r.SpanContext.TraceID(), runnerTrace)
		}
		// What the exchange did is on its span, from the records' fact.
		attrs := map[string]string{}
		for _, a := range r.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		_, costed := attrs["claw.cost_usd"]
		if attrs["gen_ai.usage.input_tokens"] == "" || !costed && attrs["claw.cost_unknown"] != "true" {
			t.Errorf("request span without usage or cost: %v", attrs)
		}
		if attrs["claw.mediated"] == "true" && attrs["claw.model_calls"] != "2" {
			t.Errorf("mediated request span: %v, want claw.model_calls 2", attrs)
		}
	}
	// The mediated request: request -> round -> (upstream call, tool call).
	child := func(parent tracetest.SpanStub, name string) []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, s := range byName[name] {
			if s.Parent.SpanID() == parent.SpanContext.SpanID() {
				out = append(out, s)
			}
		}
		return out
	}
	var mediated tracetest.SpanStub
	for _, r := range requests {
		if len(child(r, "claw.round")) > 0 {
			mediated = r
		}
	}
	rounds := child(mediated, "claw.round")
	if len(rounds) != 2 {
		t.Fatalf("rounds under the mediated request: %d (%v)", len(rounds), names(spans))
	}
	if len(child(rounds[0], "chat gpt-test")) != 1 || len(child(rounds[0], "tool desk.trade")) != 1 {
		t.Fatalf("round 1 children: %v", names(spans))
	}
	// The native call's tool span joins its /mcp request's span.
	var native tracetest.SpanStub
	for _, s := range byName["tool desk.get_context"] {
		native = s
	}
	if !native.Parent.IsValid() {
		t.Fatal("the native tool span has no parent")
	}
	// Propagation: the provider and the tool service were in the trace.
	mu.Lock()
	defer mu.Unlock()
	if len(providerSaw) == 0 {
		t.Fatal("the provider was not called")
	}
	for _, tp := range providerSaw {
		// The runner's trace, under cllama's upstream span (not the
		// runner's own span, which a copied header would show).
		if !strings.Contains(tp, runnerTrace) || strings.Contains(tp, "00f067aa0ba902b7") {
			t.Errorf("provider got traceparent %q", tp)
		}
	}
	var tradeTP string
	p.svc.mu.Lock()
	for i, s := range p.svc.seen {
		if strings.HasPrefix(s, "/trade") {
			tradeTP = p.svc.traceparents[i]
		}
	}
	p.svc.mu.Unlock()
	if !strings.Contains(tradeTP, runnerTrace) {
		t.Errorf("the tool service got traceparent %q", tradeTP)
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
