package modelsim

import (
	"encoding/json"
	"strconv"
	"testing"
)

// The trading desk's executor script: each of the three orders (5 AAPL,
// unheld; 100 NVDA, approved; 80 MSFT, denied) checks the context, then
// places exactly its own order once the trade tool is offered, and answers
// its own result. "Buy 80 …" and "Buy 100 …" must not fall into the 5 AAPL
// rules (which match "buy 5"), and the denial's answer needs the
// operator's reason in the request.
func TestTradingDeskScriptHeldOrders(t *testing.T) {
	sc, err := LoadScript("../../examples/trading-desk/model-script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const reason = "over the desk's 25000 USD per-order limit"
	filled := func(sym string, qty int) string {
		return `{"ok":true,"data":{"id":"T0002","claw_id":"executor","symbol":"` + sym + `","side":"buy","quantity":` + itoa(qty) + `,"status":"filled"}}`
	}
	denied := func(why string) string {
		return `{"ok":false,"error":{"code":"approval_denied","message":"not executed: a person denied this call (approval 0123): ` + why + `"}}`
	}
	for _, c := range []struct {
		user, tool, result string
		offered            bool
		rule               string
		call               string // the order placed, when the rule places one
	}{
		{user: "Buy 5 shares of AAPL.", rule: "executor-check-context"},
		{user: "Buy 5 shares of AAPL.", tool: "trading-api__get_market_context", result: `{"ok":true}`, offered: true, rule: "executor-place-order", call: `{"quantity":5,"side":"buy","symbol":"AAPL"}`},
		{user: "Buy 5 shares of AAPL.", tool: "trading-api__execute_trade", result: filled("AAPL", 5), offered: true, rule: "executor-filled"},
		{user: "Buy 100 shares of NVDA.", rule: "executor-check-context-held"},
		{user: "Buy 100 shares of NVDA.", tool: "trading-api__get_market_context", result: `{"ok":true}`, offered: false, rule: "fallback"},
		{user: "Buy 100 shares of NVDA.", tool: "trading-api__get_market_context", result: `{"ok":true}`, offered: true, rule: "executor-place-held-nvda", call: `{"quantity":100,"side":"buy","symbol":"NVDA"}`},
		{user: "Buy 100 shares of NVDA.", tool: "trading-api__execute_trade", result: filled("NVDA", 100), offered: true, rule: "executor-held-filled"},
		{user: "Buy 80 shares of MSFT.", rule: "executor-check-context-held"},
		{user: "Buy 80 shares of MSFT.", tool: "trading-api__get_market_context", result: `{"ok":true}`, offered: true, rule: "executor-place-held-msft", call: `{"quantity":80,"side":"buy","symbol":"MSFT"}`},
		{user: "Buy 80 shares of MSFT.", tool: "trading-api__execute_trade", result: denied(reason), offered: true, rule: "executor-held-denied-reason"},
		{user: "Buy 80 shares of MSFT.", tool: "trading-api__execute_trade", result: denied("not today"), offered: true, rule: "executor-held-denied"},
	} {
		conv, err := decodeAnthropic(executorRequest(t, c.user, c.tool, c.result, c.offered))
		if err != nil {
			t.Fatal(err)
		}
		r := sc.Match(conv)
		if r == nil || r.Name != c.rule {
			t.Errorf("%q after %s: rule %v, want %s", c.user, c.tool, r, c.rule)
			continue
		}
		if c.call != "" {
			if len(r.Reply.ToolCalls) != 1 || string(r.Reply.ToolCalls[0].args) != c.call {
				t.Errorf("%s places %+v, want execute_trade %s", r.Name, r.Reply.ToolCalls, c.call)
			}
		}
	}
}

// executorRequest is an Anthropic request of the executor's: the feed in
// the system prompt, the user's order and, when tool is set, one call of it
// answered by result.
func executorRequest(t *testing.T, user, tool, result string, tradeOffered bool) []byte {
	t.Helper()
	schema := map[string]any{"type": "object"}
	tools := []map[string]any{{"name": "trading-api__get_market_context", "input_schema": schema}, {"name": "save_note", "input_schema": schema}}
	if tradeOffered {
		tools = append(tools, map[string]any{"name": "trading-api__execute_trade", "input_schema": schema})
	}
	msgs := []map[string]any{{"role": "user", "content": user}}
	if tool != "" {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": "tu1", "name": tool, "input": map[string]any{}}}},
			map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "tu1", "content": result}}})
	}
	body, err := json.Marshal(map[string]any{"model": "scripted-executor", "max_tokens": 1024,
		"system": "BEGIN FEED: market-summary\nAAPL 190.50\nEND FEED", "tools": tools, "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func itoa(n int) string { return strconv.Itoa(n) }
