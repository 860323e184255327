package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
)

// Cost and budgets reach Prometheus: cllama_cost_usd_total in dollars by
// agent, provider and model (an unpriced call adds nothing), and a
// budget's spent and limit gauges (the pod's without an agent).
func TestSpendMetrics(t *testing.T) {
	s := New(Options{Pod: "desk"})
	s.Event(&audit.Event{Type: audit.TypeResponse, ClawID: "a", Format: "openai", Model: "openai/gpt-4o", StatusCode: 200, CostUSD: audit.KnownCost(25_000)})
	s.Event(&audit.Event{Type: audit.TypeResponse, ClawID: "a", Format: "openai", Model: "openai/gpt-4o", StatusCode: 200, CostUSD: audit.KnownCost(1_500)})
	s.Event(&audit.Event{Type: audit.TypeResponse, ClawID: "a", Format: "openai", Model: "local/x", StatusCode: 200, CostUSD: audit.UnknownCost(), CostUnknown: true})
	s.Budget("a", "agent", "usd", "day", 26_500, 5_000_000)
	s.Budget("a", "pod", "requests", "month", 3, 100)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`cllama_cost_usd_total{agent="a",model="openai/gpt-4o",pod="desk",provider="openai"} 0.0265`,
		`cllama_budget_spent{agent="a",per="day",pod="desk",scope="agent",unit="usd"} 0.0265`,
		`cllama_budget_limit{agent="a",per="day",pod="desk",scope="agent",unit="usd"} 5`,
		`cllama_budget_spent{agent="",per="month",pod="desk",scope="pod",unit="requests"} 3`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %s in\n%s", want, grep(string(body), "cllama_cost|cllama_budget_"))
		}
	}
	if strings.Contains(string(body), `model="local/x"`) && strings.Contains(string(body), `cllama_cost_usd_total{agent="a",model="local/x"`) {
		t.Error("an unpriced call was counted")
	}
}

func grep(s, prefixes string) string {
	var out []string
	for _, ln := range strings.Split(s, "\n") {
		for _, p := range strings.Split(prefixes, "|") {
			if strings.HasPrefix(ln, p) {
				out = append(out, ln)
			}
		}
	}
	return strings.Join(out, "\n")
}
