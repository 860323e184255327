package recorder

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
)

type memSink struct {
	mu      sync.Mutex
	events  []audit.Event
	entries []history.Entry
}

func (m *memSink) Event(e *audit.Event) {
	m.mu.Lock()
	m.events = append(m.events, *e)
	m.mu.Unlock()
}

func (m *memSink) Entry(e *history.Entry) {
	m.mu.Lock()
	m.entries = append(m.entries, *e)
	m.mu.Unlock()
}

type failingHistory struct{ got []history.Entry }

func (f *failingHistory) Append(e history.Entry) error {
	f.got = append(f.got, e)
	return errors.New("disk full")
}

// Every report reaches the audit log as before and then each sink, with
// the time the log stamped; a history failure is the caller's to hear,
// and the sinks still hear the entry.
func TestReportsFanOut(t *testing.T) {
	var log bytes.Buffer
	h := &failingHistory{}
	sink := &memSink{}
	r := New(audit.New(&log), h, sink)
	second := &memSink{}
	r.Add(second)
	r.Emit(audit.Event{Type: audit.TypeToolCall, ClawID: "a", Tool: "svc.t", Status: "ok"})
	if !strings.Contains(log.String(), `"type":"tool_call"`) {
		t.Fatalf("audit line: %q", log.String())
	}
	if len(sink.events) != 1 || sink.events[0].TS.IsZero() || sink.events[0].Tool != "svc.t" || len(second.events) != 1 {
		t.Fatalf("sinks heard %+v / %+v", sink.events, second.events)
	}
	if !strings.Contains(log.String(), sink.events[0].TS.Format("2006-01-02T15:04:05")) {
		t.Fatal("the sink's event must carry the time the log wrote")
	}
	err := r.Append(history.Entry{ID: "r1", AgentID: "a"})
	if err == nil || len(h.got) != 1 || len(sink.entries) != 1 || sink.entries[0].ID != "r1" {
		t.Fatalf("append: %v, history %v, sink %v", err, h.got, sink.entries)
	}
	if !r.HistoryOn() || !r.HasSinks() {
		t.Fatal("history and sinks are on")
	}
}

// A nil Recorder (a stage built without one) records nothing and never
// panics.
func TestNilRecorder(t *testing.T) {
	var r *Recorder
	r.Emit(audit.Event{Type: audit.TypeError})
	if err := r.Append(history.Entry{}); err != nil || r.HistoryOn() || r.HasSinks() {
		t.Fatal("a nil recorder must be inert")
	}
	empty := New(nil, nil)
	empty.Emit(audit.Event{Type: audit.TypeError})
	if empty.HistoryOn() {
		t.Fatal("no history given")
	}
}
