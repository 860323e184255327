package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/modelsim"
)

// runnerSummary is the line each reference runner prints last.
type runnerSummary struct {
	Runner string `json:"runner"`
	Turns  []struct {
		User        string   `json:"user"`
		Answer      string   `json:"answer"`
		NativeCalls []string `json:"native_calls"`
		MCPCalls    []string `json:"mcp_calls"`
	} `json:"turns"`
	Failure string `json:"failure"`
}

// receivedRequest is one request as trading-api saw it.
type receivedRequest struct {
	Method     string          `json:"method"`
	Path       string          `json:"path"`
	ClawID     string          `json:"claw_id"`
	Authorized bool            `json:"authorized"`
	Body       json.RawMessage `json:"body"`
}

// received is the trading-api's operator view of what reached it.
type received struct {
	Received []receivedRequest `json:"received"`
	Trades   []struct {
		ClawID   string  `json:"claw_id"`
		Symbol   string  `json:"symbol"`
		Side     string  `json:"side"`
		Quantity float64 `json:"quantity"`
	} `json:"trades"`
}

// TestTradingDesk runs examples/trading-desk on Docker and checks the
// promises the pod makes: governed tools reach the service with the
// projected credential and only for the agent granted them, feeds reach the
// model, runners keep their own tools, and history and audit record it all.
func TestTradingDesk(t *testing.T) {
	requireDocker(t)
	buildNetprobe(t)
	eachCompose(t, tradingDesk)
}

// agents are the example pod's agents.
var agents = []string{"analyst", "researcher", "executor", "scout"}

func tradingDesk(t *testing.T) {
	p := startPod(t, "trading-desk", probeServices)
	// The executor's turns 3 and 4 wait for a person: decide them as the
	// operator while the pod runs.
	held := decideHeldOrders(t, p)

	summaries := map[string]runnerSummary{}
	for _, agent := range agents {
		code := p.waitExited(agent, 3*time.Minute)
		log := p.logs(agent)
		if code != 0 {
			t.Fatalf("%s exited %d:\n%s\ncllama:\n%s", agent, code, log, p.logs("cllama"))
		}
		for _, line := range strings.Split(log, "\n") {
			if rest, ok := strings.CutPrefix(line, "RUNNER_SUMMARY "); ok {
				var s runnerSummary
				if err := json.Unmarshal([]byte(rest), &s); err != nil {
					t.Fatalf("%s summary: %v", agent, err)
				}
				summaries[agent] = s
			}
		}
		s, ok := summaries[agent]
		if !ok || s.Failure != "" || len(s.Turns) == 0 {
			t.Fatalf("%s: no successful summary:\n%s", agent, log)
		}
		for _, turn := range s.Turns {
			if turn.Answer == "" || strings.Contains(turn.Answer, "SCRIPT FALLBACK") {
				t.Errorf("%s: turn %q got answer %q (a scripted rule did not match: something did not reach the model)", agent, turn.User, turn.Answer)
			}
		}
	}

	t.Run("perimeter", func(t *testing.T) { checkPerimeter(t, p) })
	t.Run("operator reaches the admin listener", func(t *testing.T) { checkAdmin(t, p) })

	t.Run("runners keep their native tools", func(t *testing.T) {
		for agent, s := range summaries {
			var native []string
			for _, turn := range s.Turns {
				native = append(native, turn.NativeCalls...)
			}
			if !slices.Contains(native, "save_note") {
				t.Errorf("%s never ran its own save_note tool: %+v", agent, s.Turns)
			}
		}
	})

	var desk received
	p.getJSON("trading-api", 4000, "/api/v1/received", &desk)
	t.Run("executor's trades reached the service with the projected bearer", func(t *testing.T) {
		// The 5 AAPL is under the approve: rule's 50 shares and runs
		// unheld; the 100 NVDA runs once approved; the 80 MSFT was denied.
		var got []string
		for _, tr := range desk.Trades {
			got = append(got, fmt.Sprintf("%s %s %g", tr.ClawID, tr.Symbol, tr.Quantity))
		}
		if want := []string{"executor AAPL 5", "executor NVDA 100"}; !slices.Equal(got, want) {
			t.Fatalf("trades = %q, want exactly %q", got, want)
		}
		for _, r := range desk.Received {
			if !r.Authorized {
				t.Errorf("%s %s from %q arrived without the projected bearer", r.Method, r.Path, r.ClawID)
			}
		}
	})
	t.Run("analyst and researcher could not trade", func(t *testing.T) {
		for _, r := range desk.Received {
			if (r.ClawID == "analyst" || r.ClawID == "researcher") && r.Method == "POST" {
				t.Errorf("%s reached %s %s", r.ClawID, r.Method, r.Path)
			}
		}
	})

	var seen []modelsim.Record
	p.getJSON("claw-model", 8080, "/requests", &seen)
	executorOffered := map[bool]int{}
	t.Run("what the model saw", func(t *testing.T) {
		if len(seen) == 0 {
			t.Fatal("the model received no requests")
		}
		mcpResult := slices.ContainsFunc(seen, func(rec modelsim.Record) bool {
			return rec.Conversation != nil && slices.ContainsFunc(rec.ToolResults, func(r modelsim.ToolResult) bool {
				return strings.Contains(r.Content, "Acme Corporation")
			})
		})
		if !mcpResult {
			t.Error("the MCP tool's result (Acme Corporation) never reached the model")
		}
		for _, rec := range seen {
			if rec.Conversation == nil {
				t.Fatalf("request %d was not understood: %s", rec.Seq, rec.Error)
			}
			// The analyst and the researcher share the analyst's model and
			// grant; only the API differs.
			agent := "executor"
			switch {
			case strings.Contains(rec.Model, "analyst"):
				agent = "analyst"
			case strings.Contains(rec.Model, "native"):
				agent = "scout"
			}
			if !strings.Contains(rec.System, "BEGIN FEED: market-summary") {
				t.Errorf("%s request %d: the market-summary feed is not in the system context", agent, rec.Seq)
			}
			for _, res := range rec.ToolResults {
				if strings.Contains(res.Content, "http://") || strings.Contains(res.Content, ":8080/mcp") {
					t.Errorf("request %d: a tool result shows a service URL: %s", rec.Seq, res.Content)
				}
			}
			if !slices.Contains(rec.Tools, "save_note") {
				t.Errorf("%s request %d: the runner's save_note was not offered beside the managed tools: %v", agent, rec.Seq, rec.Tools)
			}
			trade := slices.ContainsFunc(rec.Tools, func(n string) bool { return strings.Contains(n, "execute_trade") })
			if agent == "analyst" && trade {
				t.Errorf("analyst request %d was offered execute_trade: %v", rec.Seq, rec.Tools)
			}
			if agent == "executor" {
				executorOffered[trade]++
			}
			// The scout's tools are native: exactly what its runner listed
			// on /mcp (its grant and cllama's built-in claw.read_result)
			// and offered itself, cllama added none.
			if agent == "scout" {
				want := []string{"claw__read_result", "market-data__lookup_symbol", "save_note", "trading-api__get_market_context"}
				got := slices.Sorted(slices.Values(rec.Tools))
				if !slices.Equal(got, want) {
					t.Errorf("scout request %d offered %v, want %v", rec.Seq, got, want)
				}
			}
			if got := rec.Auth["Authorization"] + rec.Auth["X-Api-Key"]; !strings.Contains(got, "sim-key-not-secret") {
				t.Errorf("request %d reached the provider with credentials %q, not the pod's provider key", rec.Seq, got)
			}
			for _, secret := range []string{"demo-trading-token", "http://trading-api", "trading-api:4000"} {
				if strings.Contains(string(rec.Body), secret) {
					t.Errorf("request %d leaked %q to the model", rec.Seq, secret)
				}
			}
		}
	})

	t.Run("tool policy: execute_trade offered only after the market context", func(t *testing.T) {
		// The executor's first request of the conversation comes before
		// any get_market_context; its second turn has it in its history.
		if executorOffered[false] == 0 || executorOffered[true] == 0 {
			t.Errorf("executor requests offering execute_trade: %d, not offering: %d; want some of each", executorOffered[true], executorOffered[false])
		}
	})

	events := jsonLines[audit.Event](p.logs("cllama"))
	t.Run("audit records the tool calls", func(t *testing.T) {
		find := func(agent, tool, status string) bool {
			return slices.ContainsFunc(events, func(e audit.Event) bool {
				return e.Type == audit.TypeToolCall && e.ClawID == agent && e.Tool == tool && e.Status == status
			})
		}
		if !find("executor", "trading-api.execute_trade", "ok") {
			t.Error("no ok tool_call event for the executor's trade")
		}
		if !slices.ContainsFunc(events, func(e audit.Event) bool {
			return e.ClawID == "executor" && e.Type == audit.TypeResponse && slices.ContainsFunc(e.PolicyFiltered, func(f audit.Filtered) bool {
				return f.Tool == "trading-api.execute_trade" && slices.Equal(f.Rules, []string{"r1"})
			})
		}) {
			t.Error("no executor response event lists execute_trade as withheld by r1 (policy_filtered)")
		}
		if !find("analyst", "trading-api.get_market_context", "ok") {
			t.Error("no ok tool_call event for the analyst's market context")
		}
		if !find("analyst", "market-data.lookup_symbol", "ok") {
			t.Error("no ok tool_call event for the analyst's MCP call through the stdio wrapper")
		}
		if !find("analyst", "trading-api.execute_trade", "unknown_tool") {
			t.Error("the analyst's attempted trade was not refused as unknown_tool")
		}
		for _, call := range [][2]string{{"trading-api.get_market_context", "ok"}, {"market-data.lookup_symbol", "ok"}, {"trading-api.execute_trade", "unknown_tool"}} {
			if !find("researcher", call[0], call[1]) {
				t.Errorf("no %s tool_call event for the researcher's %s over the Responses API", call[1], call[0])
			}
		}
		for _, e := range events {
			if e.ClawID == "researcher" && e.Format != "" && e.Format != "responses" {
				t.Errorf("researcher event in format %q, want responses: %+v", e.Format, e)
			}
		}
		if !slices.ContainsFunc(events, func(e audit.Event) bool {
			return e.ClawID == "researcher" && e.Type == audit.TypeResponse && e.Format == "responses" && e.Stream && e.TokensIn != nil && *e.TokensIn > 0
		}) {
			t.Error("no streamed Responses response event with tokens for the researcher")
		}
		for _, e := range events {
			if e.Type == audit.TypeRequest && (e.ManifestPresent == nil || !*e.ManifestPresent || e.ToolsCount == nil) {
				t.Errorf("request event without manifest_present/tools_count: %+v", e)
			}
		}
	})

	t.Run("held orders: one approved, one denied", func(t *testing.T) {
		checkHeldOrders(t, p, held, desk, summaries["executor"], seen, events)
	})

	t.Run("scout used its native tools over MCP", func(t *testing.T) { checkNative(t, p, summaries["scout"], desk, events) })

	t.Run("the intern's one-request budget refused its second turn", func(t *testing.T) {
		p.waitExited("intern", 3*time.Minute)
		// The SDK's error says only the status; the audit log says which
		// budget refused it.
		if log := p.logs("intern"); !strings.Contains(log, "402") {
			t.Errorf("intern's log shows no 402:\n%s", log)
		}
		after := jsonLines[audit.Event](p.logs("cllama"))
		if !slices.ContainsFunc(after, func(e audit.Event) bool {
			return e.ClawID == "intern" && e.Type == "budget_exceeded" && e.Budget != nil && e.Budget.Scope == "agent" && e.Budget.Unit == "requests"
		}) {
			t.Error("no budget_exceeded audit event naming the intern's request budget")
		}
	})
	t.Run("history records the tool trace", func(t *testing.T) {
		calls := map[string][]history.ToolCall{}
		for _, agent := range []string{"analyst", "researcher", "executor"} {
			entries, _, err := history.ReadAgent(filepath.Join(p.dir, ".claw-runtime", "history"), agent)
			if err != nil {
				t.Fatalf("%s history: %v", agent, err)
			}
			for _, e := range entries {
				for _, r := range e.ToolTrace {
					calls[agent] = append(calls[agent], r.ToolCalls...)
				}
			}
		}
		var traded bool
		for _, c := range calls["executor"] {
			traded = traded || (c.Name == "trading-api.execute_trade" && strings.Contains(string(c.Result), `"ok":true`))
		}
		if !traded {
			t.Errorf("executor history has no successful execute_trade: %+v", calls["executor"])
		}
		for _, agent := range []string{"analyst", "researcher"} {
			var refused bool
			for _, c := range calls[agent] {
				refused = refused || (c.Name == "trading-api.execute_trade" && strings.Contains(string(c.Result), "unknown_tool"))
			}
			if !refused {
				t.Errorf("%s history does not record the refused trade: %+v", agent, calls[agent])
			}
		}
	})

	t.Run("agents hold no provider key", func(t *testing.T) {
		generated, err := os.ReadFile(filepath.Join(p.dir, "compose.generated.yml"))
		if err != nil {
			t.Fatal(err)
		}
		// The provider key is interpolated from .env into cllama's settings
		// only; it must not be in any agent container's environment.
		for _, agent := range agents {
			env := run(t, "", time.Minute, "docker", "inspect", "-f", "{{range .Config.Env}}{{println .}}{{end}}", p.container(agent))
			if strings.Contains(env, "sim-key-not-secret") || strings.Contains(env, "demo-trading-token") {
				t.Errorf("%s's environment holds a credential:\n%s", agent, env)
			}
		}
		if !strings.Contains(string(generated), "cllama") {
			t.Error("compose.generated.yml has no cllama service")
		}
	})
}
