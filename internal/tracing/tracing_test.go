package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Off (no endpoint configured): Setup turns nothing on, spans are no-ops
// that allocate nothing, and no header is read or written.
func TestOffUnlessConfigured(t *testing.T) {
	shutdown, on, err := Setup(context.Background(), "desk", func(string) string { return "" })
	if err != nil || on || Enabled() {
		t.Fatalf("on=%v enabled=%v err=%v", on, Enabled(), err)
	}
	_ = shutdown(context.Background())
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	ctx := Extract(context.Background(), h)
	if trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatal("a traceparent was read with tracing off")
	}
	out := http.Header{}
	Inject(ctx, out)
	if len(out) != 0 {
		t.Fatalf("headers written with tracing off: %v", out)
	}
	if n := testing.AllocsPerRun(100, func() {
		_, span := Start(context.Background(), "x", trace.SpanKindInternal)
		span.End()
	}); n != 0 {
		t.Fatalf("a span with tracing off allocates %v times", n)
	}
}

// On: spans record, trace context crosses the transport, and the status
// writer reports what the handler wrote while still flushing.
func TestOnPropagatesAndRecords(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	t.Cleanup(Uninstall)
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("Traceparent") }))
	defer srv.Close()
	ctx, span := Start(context.Background(), "parent", trace.SpanKindServer)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	res, err := (&http.Client{Transport: Transport(http.DefaultTransport)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	span.End()
	if !strings.Contains(got, span.SpanContext().TraceID().String()) {
		t.Fatalf("the service got traceparent %q", got)
	}
	if len(exp.GetSpans()) != 1 || exp.GetSpans()[0].Name != "parent" {
		t.Fatalf("spans %v", exp.GetSpans())
	}
	rec := httptest.NewRecorder()
	sw := &StatusWriter{ResponseWriter: rec}
	sw.WriteHeader(http.StatusTeapot)
	_, _ = sw.Write([]byte("x"))
	sw.Flush()
	if sw.Status != http.StatusTeapot || !rec.Flushed || http.NewResponseController(sw) == nil {
		t.Fatalf("status %d flushed %v", sw.Status, rec.Flushed)
	}
}
