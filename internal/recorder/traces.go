package recorder

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
)

// TraceSink is the traces' sink: what an exchange did (its outcome, usage
// over every model call, cost, and for a mediated turn how many model
// calls made it) goes onto the exchange's span from the same fact the
// audit event and the history entry are derived from, so a span never
// says something the records do not.
//
// The spans themselves are opened by the stages, at the boundaries where
// trace context must be live: the edge's server span (a runner's
// traceparent joined), the client span of each upstream model call and
// the span of each tool call and feed fetch (their traceparent sent on,
// so providers and services join the agent's trace). A span made after
// the fact could not be propagated; these carry only what their own call
// saw (its status), and the exchange's outcome is set here.
type TraceSink struct{}

// Event implements Sink; events reach traces through their facts.
func (TraceSink) Event(*audit.Event) {}

// Entry implements Sink.
func (TraceSink) Entry(*history.Entry) {}

// Exchange implements ExchangeSink.
func (TraceSink) Exchange(f *Exchange) {
	span := f.Span
	if span == nil || !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	if f.HaveUsage {
		attrs = append(attrs, attribute.Int("gen_ai.usage.input_tokens", f.TokensIn), attribute.Int("gen_ai.usage.output_tokens", f.TokensOut))
	}
	switch c := f.Cost; {
	case c.Known:
		// Integer micro-dollars in the records; a float only here, for
		// the span's reader.
		attrs = append(attrs, attribute.Float64("claw.cost_usd", float64(c.MicroUSD)/1e6))
	case c.Unknown():
		attrs = append(attrs, attribute.Bool("claw.cost_unknown", true))
	}
	if f.Mediated {
		attrs = append(attrs, attribute.Bool("claw.mediated", true), attribute.Int("claw.model_calls", f.Calls))
	}
	span.SetAttributes(attrs...)
	if f.Failed {
		span.SetStatus(codes.Error, f.ErrorType)
	}
}
