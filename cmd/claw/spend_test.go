package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/history"
)

// claw spend reads the pod's session history, with the pod down, and
// sums what each agent spent; unpriced exchanges are counted apart.
func TestSpend(t *testing.T) {
	dir := inObservePod(t)
	hdir := filepath.Join(dir, filepath.FromSlash(compile.HistoryDir))
	if err := os.RemoveAll(hdir); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	write := func(agent string, at time.Time, model string, cost audit.Cost) {
		e := history.Entry{ID: agent + at.Format("150405.000"), Timestamp: at, AgentID: agent, Format: "openai", Model: model, Status: "ok", StatusCode: 200,
			Request: json.RawMessage(`{}`), Usage: history.Usage{PromptTokens: 100, CompletionTokens: 10}, CostUSD: cost, CostUnknown: cost.Unknown()}
		line, _ := json.Marshal(e)
		p := history.Path(hdir, agent)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(append(line, '\n'))
		f.Close()
	}
	write("executor", now.Add(-time.Hour), "openai/gpt-4o", audit.KnownCost(25_000))
	write("executor", now.Add(-30*time.Minute), "openai/gpt-4o", audit.KnownCost(1_500))
	write("analyst", now.Add(-time.Hour), "local/x", audit.UnknownCost())
	write("analyst", now.Add(-72*time.Hour), "openai/gpt-4o", audit.KnownCost(1_000_000))

	r := runClaw(t, "", "spend", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err.String())
	}
	var rep struct {
		Rows []struct {
			Key      string  `json:"key"`
			Requests int     `json:"requests"`
			Cost     float64 `json:"cost_usd"`
			Unpriced int     `json:"unpriced"`
		} `json:"rows"`
		Total struct {
			Cost     json.Number `json:"cost_usd"`
			Requests int         `json:"requests"`
		} `json:"total"`
	}
	if err := json.Unmarshal(r.out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, r.out.String())
	}
	if len(rep.Rows) != 2 || rep.Rows[0].Key != "analyst" || rep.Rows[0].Unpriced != 1 || rep.Rows[1].Cost != 0.0265 || rep.Total.Cost != "1.0265" || rep.Total.Requests != 4 {
		t.Fatalf("report %s", r.out.String())
	}
	r = runClaw(t, "", "spend", "--since", "24h", "--by", "model")
	if r.code != 0 || !strings.Contains(r.out.String(), "openai/gpt-4o") || !strings.Contains(r.out.String(), "0.0265") || strings.Contains(r.out.String(), "1.0265") {
		t.Fatalf("--since 24h --by model: %d %s %s", r.code, r.out.String(), r.err.String())
	}
	for _, bad := range [][]string{{"spend", "--by", "week"}, {"spend", "--since", "yesterday"}} {
		if r := runClaw(t, "", bad...); r.code != ExitUsage {
			t.Errorf("%v: exit %d", bad, r.code)
		}
	}
}
