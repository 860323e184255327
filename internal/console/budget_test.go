package console

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

type fakeBudgets map[string][]Budget

func (f fakeBudgets) AgentBudgets(agent string) []Budget { return f[agent] }

// Budgets in every unit are shown on the pod's page and the agent's, each
// with what its current window spent, its limit, its period and (on the
// agent's page) when it resets; one at or past its limit is marked.
func TestBudgetsInEveryUnit(t *testing.T) {
	resets := time.Now().Add(3*time.Hour + 30*time.Second)
	b := fakeBudgets{"trader": {
		{Scope: "agent", Unit: "usd", Period: "day", Limit: 5_000_000, Spent: 1_250_000, ResetsAt: resets},
		{Scope: "agent", Unit: "requests", Period: "hour", Limit: 100, Spent: 100, ResetsAt: resets},
		{Scope: "agent", Unit: "tokens", Period: "month", Limit: 2_000_000, Spent: 1_634_567, ResetsAt: resets},
		{Scope: "pod", Unit: "requests", Period: "total", Limit: 10_000, Spent: 42},
	}}
	r := newRigWith(t, func(o *Options) { o.Budgets = b })
	c := client()
	r.login(t, c, operatorToken)
	_, home := get(t, c, r.srv.URL+"/")
	row := regexp.MustCompile(`(?s)<tr data-agent="trader">.*?</tr>`).FindString(home)
	for _, want := range []string{
		`data-budget="agent/usd/day" title="agent budget; resets in 3h">$1.25 of $5.00/day<`,
		`<span class="budget over" data-budget="agent/requests/hour"`, `>100 requests of 100 requests/hour<`,
		`>1,634,567 tokens of 2,000,000 tokens/month<`,
		`data-budget="pod/requests/total" title="pod budget; resets never">42 requests of 10,000 requests/total (pod)<`,
	} {
		if !strings.Contains(row, want) {
			t.Errorf("pod page: want %q in trader's row:\n%s", want, row)
		}
	}
	if !strings.Contains(home, `<tr data-agent="helper">`) || strings.Contains(regexp.MustCompile(`(?s)<tr data-agent="helper">.*?</tr>`).FindString(home), "data-budget") {
		t.Error("an agent without budgets shows one")
	}
	_, page := get(t, c, r.srv.URL+"/agents/trader")
	for _, want := range []string{
		`<tr data-budget="agent/usd/day"><td>agent</td><td>usd</td><td>day</td><td class="num budget">$1.25</td><td class="num">$5.00</td>`,
		`<tr data-budget="agent/requests/hour"><td>agent</td><td>requests</td><td>hour</td><td class="num budget over">100 requests</td><td class="num">100 requests</td>`,
		`<td>tokens</td><td>month</td><td class="num budget near">1,634,567 tokens</td><td class="num">2,000,000 tokens</td>`,
		`<tr data-budget="pod/requests/total"><td>pod</td><td>requests</td><td>total</td><td class="num budget">42 requests</td><td class="num">10,000 requests</td><td title="">never</td>`,
		">in 3h</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("agent page: want %q in\n%s", want, regexp.MustCompile(`(?s)<table id="budgets">.*?</table>`).FindString(page))
		}
	}
}

func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}
