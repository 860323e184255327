package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/keypool"
)

// The example Grafana dashboard queries only metrics cllama exports: a
// renamed metric would leave an operator with empty panels.
func TestDashboardQueriesExistingMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../examples/grafana/cllama-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON Grafana can import: %v", err)
	}
	known := New(Options{Continuity: func() (int, int64) { return 0, 0 }, KeyPools: func() []keypool.ProviderState { return nil }}).Names()
	metricName := regexp.MustCompile(`cllama_[a-z_]+`)
	used := map[string]bool{}
	check := func(where, expr string) {
		if strings.Count(expr, "(") != strings.Count(expr, ")") || strings.Count(expr, "{") != strings.Count(expr, "}") {
			t.Errorf("%s: unbalanced query %q", where, expr)
		}
		names := metricName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: %q queries no cllama metric", where, expr)
		}
		for _, n := range names {
			base := n
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(n, suffix); ok && slices.Contains(known, b) {
					base = b
				}
			}
			if !slices.Contains(known, base) {
				t.Errorf("%s: %q queries %s, which cllama does not export (it exports %v)", where, expr, n, known)
			}
			used[base] = true
		}
	}
	if len(d.Panels) == 0 {
		t.Fatal("no panels")
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			check("panel "+p.Title, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && strings.Contains(q, "cllama_") {
			check("variable "+v.Name, q)
		}
	}
	for _, n := range known {
		if !used[n] {
			t.Errorf("metric %s is on no panel", n)
		}
	}
}
