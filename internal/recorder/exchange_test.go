package recorder

import (
	"errors"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/history"
)

type memHistory struct {
	got []history.Entry
	err error
}

func (m *memHistory) Append(e history.Entry) error {
	m.got = append(m.got, e)
	return m.err
}

func testExchange() *exchange.Exchange {
	start := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	return &exchange.Exchange{ID: "req_1", Agent: &agentctx.Agent{ID: "alice"}, Format: "openai", Model: "fake/m",
		Start: start, Original: []byte(`{"model":"fake/m"}`), Checked: true}
}

// One exchange fact gives the event and the entry the audit log and
// history document: a relayed 2xx is kept, a relayed error is only an
// event, a failed mediated turn is kept as an error entry, and a provider's
// body that is not JSON is kept as a string.
func TestExchangeFactDerivesEventAndEntry(t *testing.T) {
	h := &memHistory{}
	sink := &memSink{}
	r := New(nil, h, sink)
	x := testExchange()
	end := x.Start.Add(1500 * time.Millisecond)

	r.Exchange(&Exchange{X: x, End: end, Status: 200, TokensIn: 7, TokensOut: 3, HaveUsage: true, Response: []byte(`{"ok":true}`)})
	ev := sink.events[0]
	if ev.Type != audit.TypeResponse || ev.StatusCode != 200 || *ev.TokensIn != 7 || *ev.LatencyMS != 1500 || *ev.ManifestPresent || ev.Mediated {
		t.Fatalf("relayed 2xx event: %+v", ev)
	}
	en := h.got[0]
	if en.Status != history.StatusOK || en.StatusCode != 200 || string(en.Response) != `{"ok":true}` || !en.BodiesValid || en.LatencyMS != 1500 || en.Usage.TotalRounds != 0 {
		t.Fatalf("relayed 2xx entry: %+v", en)
	}

	r.Exchange(&Exchange{X: x, End: end, Status: 502})
	if len(h.got) != 1 || sink.events[1].Type != audit.TypeResponse || sink.events[1].StatusCode != 502 {
		t.Fatalf("a relayed provider error is an event only: %d entries, %+v", len(h.got), sink.events[1])
	}

	r.Exchange(&Exchange{X: x, End: end, Status: 200, Response: []byte("not json")})
	if got := string(h.got[1].Response); got != `"not json"` {
		t.Fatalf("a non-JSON 2xx body is kept quoted: %s", got)
	}

	r.Exchange(&Exchange{X: x, End: end, Mediated: true, Failed: true, Status: 502, Error: "tool loop failed", ErrorType: "tool_mediation_error", Calls: 2, HaveUsage: true})
	ev, en = sink.events[3], h.got[2]
	if ev.Type != audit.TypeError || ev.ErrorType != "tool_mediation_error" || !ev.Mediated || ev.StatusCode != 502 {
		t.Fatalf("failed turn event: %+v", ev)
	}
	if en.Status != history.StatusError || en.StatusCode != 502 || en.Error != "tool loop failed" || en.Usage.TotalRounds != 2 || en.Response != nil {
		t.Fatalf("failed turn entry: %+v", en)
	}
}

// A history that cannot be written is reported as an error event and the
// sinks still hear the entry.
func TestExchangeHistoryFailureIsAnEvent(t *testing.T) {
	h := &memHistory{err: errors.New("disk full")}
	sink := &memSink{}
	r := New(nil, h, sink)
	r.Exchange(&Exchange{X: testExchange(), Status: 200, Response: []byte(`{}`)})
	if len(sink.entries) != 1 || len(sink.events) != 2 || sink.events[1].Type != audit.TypeError || sink.events[1].Error != "session history: disk full" {
		t.Fatalf("events %+v entries %d", sink.events, len(sink.entries))
	}
}
