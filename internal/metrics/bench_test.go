package metrics

import (
	"io"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/recorder"
)

// BenchmarkRecorderCost is what metrics add to a request: the events one
// passthrough request reports (request, response) and one tool call
// reports, through the recorder, with the audit log writing to a discard
// writer, without and with the metrics sink, in the same run.
func BenchmarkRecorderCost(b *testing.B) {
	lat := int64(12)
	in, out := 100, 20
	request := audit.Event{Type: audit.TypeRequest, ClawID: "analyst", RequestID: "req_1", Format: "openai", Model: "openai/gpt-4o", Stream: true}
	response := audit.Event{Type: audit.TypeResponse, ClawID: "analyst", RequestID: "req_1", Format: "openai", Model: "openai/gpt-4o", Stream: true,
		StatusCode: 200, LatencyMS: &lat, TokensIn: &in, TokensOut: &out, Sent: 300 * time.Microsecond, FirstByte: 8 * time.Millisecond}
	tool := audit.Event{Type: audit.TypeToolCall, ClawID: "analyst", RequestID: "req_1", Format: "openai", Tool: "trading-api.get_market_context",
		Service: "trading-api", Round: 1, Status: "ok", LatencyMS: &lat, Mode: "mediated"}
	for _, withMetrics := range []bool{false, true} {
		name := "metrics=off"
		if withMetrics {
			name = "metrics=on"
		}
		rec := recorder.New(audit.New(io.Discard), nil)
		if withMetrics {
			rec.Add(New(Options{Pod: "desk"}))
		}
		b.Run(name+"/passthrough-request", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec.Emit(request)
				rec.Emit(response)
			}
		})
		b.Run(name+"/tool-call", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec.Emit(tool)
			}
		})
	}
}
