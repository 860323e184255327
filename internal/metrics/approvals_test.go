package metrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/clawdapus/clawgo/internal/audit"
)

func TestApprovalsArePendingUntilDecided(t *testing.T) {
	s := New(Options{Pod: "desk"})
	req := func(id string) *audit.Event {
		return &audit.Event{Type: audit.TypeApprovalRequested, ClawID: "tiverton", Tool: "trading-api.execute_trade", Approval: &audit.Approval{ID: id}}
	}
	dec := func(id, d string) *audit.Event {
		return &audit.Event{Type: audit.TypeApprovalDecided, ClawID: "tiverton", Tool: "trading-api.execute_trade", Approval: &audit.Approval{ID: id, Decision: d}}
	}
	s.Event(req("a"))
	s.Event(req("b"))
	s.Event(req("b")) // told twice: held once
	if v := value(t, s, "cllama_approvals_pending", ""); v != 2 {
		t.Fatalf("pending %v", v)
	}
	s.Event(dec("a", "approved"))
	s.Event(dec("b", "denied"))
	// A request another process held (lost, found at start) ends here
	// without having been pending here.
	s.Event(dec("c", "lost"))
	if v := value(t, s, "cllama_approvals_pending", ""); v != 0 {
		t.Fatalf("pending after decisions %v", v)
	}
	for d, want := range map[string]float64{"approved": 1, "denied": 1, "lost": 1, "timeout": 0} {
		if v := value(t, s, "cllama_approvals_total", d); v != want {
			t.Errorf("%s: %v", d, v)
		}
	}
}

// value is metric name's value (the series with decision d, when given).
func value(t *testing.T, s *Sink, name, d string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if d != "" && !hasLabel(m, "decision", d) {
				continue
			}
			if m.Gauge != nil {
				return m.Gauge.GetValue()
			}
			return m.Counter.GetValue()
		}
	}
	return 0
}

func hasLabel(m *dto.Metric, name, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == v {
			return true
		}
	}
	return false
}
