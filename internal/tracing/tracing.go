// Package tracing is cllama's OpenTelemetry tracing: one server span per
// request (model routes, /mcp), a client span per upstream model call, a
// span per managed tool call and per feed fetch, exported over OTLP/HTTP
// when the standard OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and W3C trace context
// accepted from runners and passed to providers and tool services. When
// no endpoint is set nothing is exported, no header is read or written,
// and spans are the global no-op tracer's.
//
// Attributes name agents, formats, models, tools, services, outcomes and
// token counts: never a token, key, service URL or argument value (unless
// CLLAMA_TRACE_ARGUMENTS=1 asks for arguments).
package tracing

import (
	"context"
	"net/http"
	"os"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope.
const Name = "github.com/clawdapus/clawgo/cllama"

var (
	tracer    atomic.Pointer[trace.Tracer]
	enabled   atomic.Bool
	arguments atomic.Bool
	prop      = propagation.TraceContext{}
)

// Enabled reports whether traces are recorded and trace context passed.
func Enabled() bool { return enabled.Load() }

// Arguments reports whether tool arguments may be span attributes.
func Arguments() bool { return arguments.Load() }

// Setup turns tracing on when the environment names an OTLP endpoint
// (getenv reads it; nil: os.Getenv). It returns a function flushing and
// stopping the exporter, and whether tracing is on.
func Setup(ctx context.Context, pod string, getenv func(string) string) (shutdown func(context.Context) error, on bool, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	noop := func(context.Context) error { return nil }
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return noop, false, nil
	}
	if getenv("OTEL_TRACES_EXPORTER") == "none" || getenv("OTEL_SDK_DISABLED") == "true" {
		return noop, false, nil
	}
	exp, err := otlptracehttp.New(ctx) // reads the OTEL_EXPORTER_OTLP_* variables
	if err != nil {
		return noop, false, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "cllama")}
	if pod != "" {
		attrs = append(attrs, attribute.String("claw.pod", pod))
	}
	// resource.Default reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES,
	// which win over the defaults above.
	res, err := resource.Merge(resource.NewSchemaless(attrs...), resource.Default())
	if err != nil {
		return noop, false, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	arguments.Store(getenv("CLLAMA_TRACE_ARGUMENTS") == "1")
	return tp.Shutdown, true, nil
}

// Install makes tp the tracer provider and turns trace context on (tests
// install one with an in-memory exporter).
func Install(tp trace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(prop)
	t := tp.Tracer(Name)
	tracer.Store(&t)
	enabled.Store(true)
}

// Uninstall turns tracing off again (tests).
func Uninstall() {
	enabled.Store(false)
	otel.SetTracerProvider(noop.NewTracerProvider())
}

// Start starts a span; without tracing it is a no-op span.
func Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !enabled.Load() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return (*tracer.Load()).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Extract returns ctx carrying the caller's W3C trace context, if any.
func Extract(ctx context.Context, h http.Header) context.Context {
	if !enabled.Load() {
		return ctx
	}
	return prop.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject writes ctx's trace context into h.
func Inject(ctx context.Context, h http.Header) {
	if !enabled.Load() {
		return
	}
	prop.Inject(ctx, propagation.HeaderCarrier(h))
}

// Transport injects each request's trace context; rt itself when
// tracing is off at the time of the call.
func Transport(rt http.RoundTripper) http.RoundTripper { return injector{rt} }

type injector struct{ rt http.RoundTripper }

func (i injector) RoundTrip(r *http.Request) (*http.Response, error) {
	if enabled.Load() && trace.SpanContextFromContext(r.Context()).IsValid() {
		r = r.Clone(r.Context())
		prop.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	}
	return i.rt.RoundTrip(r)
}

// StatusWriter records the status a handler writes, for the server span.
// It keeps the writer's Flush and lets http.ResponseController reach the
// original.
type StatusWriter struct {
	http.ResponseWriter
	Status int
}

func (w *StatusWriter) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (w *StatusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
