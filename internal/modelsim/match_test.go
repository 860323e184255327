package modelsim

import (
	"testing"
)

const matchScript = `
rules:
  - name: regex-buy
    match: {user_regex: '(?i)^buy \d+ shares of [A-Z]+'}
    reply: {text: buying}
  - name: market-result
    match: {tool_result_of: trading-api.get_market_context, tool_result_contains: BALANCE}
    reply: {text: got market}
  - name: any-result
    match: {tool_result: true}
    reply: {text: some result}
  - name: executor-only
    match: {user_contains: trade, tools_offered: [trading-api.execute_trade]}
    reply:
      tool_calls: [{name: trading-api.execute_trade, arguments: '{"symbol": "ACME", "side": "buy", "quantity": 5}'}]
  - name: analyst-trade
    match: {user_contains: trade, tools_not_offered: [execute_trade]}
    reply: {text: I cannot trade.}
  - name: feed-seen
    match: {system_contains: "BEGIN FEED: market-summary"}
    reply: {text: feed seen}
  - name: feed-anywhere
    match: {context_contains: "BEGIN FEED"}
    reply: {text: feed somewhere}
  - name: claude-only
    match: {format: anthropic, model: claude-x}
    reply: {text: hello claude}
  - name: openai-model
    match: {model: gpt-4o}
    reply: {text: hello gpt}
  - name: responses-only
    match: {format: responses}
    reply: {text: hello responses}
`

func TestRuleMatching(t *testing.T) {
	sc, err := ParseScript([]byte(matchScript))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		conv Conversation
		want string // rule name, "" for none
	}{
		{"regex", Conversation{Format: FormatOpenAI, LastUserText: "Buy 5 shares of AAPL."}, "regex-buy"},
		{"regex needs the anchor", Conversation{Format: FormatOpenAI, LastUserText: "please buy 5 shares of AAPL"}, ""},
		{"result of tool by alias", Conversation{ToolResults: []ToolResult{{Name: "trading-api__get_market_context", Content: `{"balance":5}`}}}, "market-result"},
		{"result of tool by canonical name", Conversation{ToolResults: []ToolResult{{Name: "trading-api.get_market_context", Content: "balance 5"}}}, "market-result"},
		{"result content must match", Conversation{ToolResults: []ToolResult{{Name: "trading-api__get_market_context", Content: "nothing"}}}, "any-result"},
		{"result of another service's tool", Conversation{ToolResults: []ToolResult{{Name: "other__get_market_context", Content: "balance"}}}, "any-result"},
		{"executor offered the tool", Conversation{LastUserText: "make a trade", Tools: []string{"note", "trading-api__execute_trade"}}, "executor-only"},
		{"analyst not offered it", Conversation{LastUserText: "make a trade", Tools: []string{"note", "trading-api__get_market_context"}}, "analyst-trade"},
		// A bare name in tools_not_offered excludes that tool from any
		// service; executor-only needs the trading-api one.
		{"bare name addresses any service", Conversation{LastUserText: "make a trade", Tools: []string{"svc.execute_trade"}}, ""},
		{"system feed", Conversation{System: "--- BEGIN FEED: market-summary (from x) ---"}, "feed-seen"},
		{"feed in a message", Conversation{allText: []string{"hi", "--- BEGIN FEED: other ---"}}, "feed-anywhere"},
		{"format and model", Conversation{Format: FormatAnthropic, Model: "claude-x"}, "claude-only"},
		{"model after provider prefix", Conversation{Format: FormatOpenAI, Model: "openai/gpt-4o"}, "openai-model"},
		{"wrong format", Conversation{Format: FormatOpenAI, Model: "claude-x"}, ""},
		{"responses format", Conversation{Format: FormatResponses, Model: "gpt-5"}, "responses-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if r := sc.Match(&tc.conv); r != nil {
				got = r.Name
			}
			if got != tc.want {
				t.Fatalf("matched %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDefaultRuleIsLastResort(t *testing.T) {
	sc, err := ParseScript([]byte(`
rules:
  - {name: fallback, default: true, reply: {text: default}}
  - {name: greet, match: {user_contains: hello}, reply: {text: hi}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if r := sc.Match(&Conversation{LastUserText: "HELLO there"}); r.Name != "greet" {
		t.Fatalf("got %q: the default rule must not shadow later rules", r.Name)
	}
	if r := sc.Match(&Conversation{LastUserText: "bye"}); r.Name != "fallback" {
		t.Fatalf("got %q", r.Name)
	}
}

func TestResolveTool(t *testing.T) {
	offered := []string{"note", "trading-api__get_market_context", "trading-api.execute_trade", "get_market_context"}
	for script, want := range map[string]string{
		"trading-api.get_market_context": "trading-api__get_market_context",
		"trading-api__execute_trade":     "trading-api.execute_trade",
		"execute_trade":                  "trading-api.execute_trade",
		"get_market_context":             "get_market_context", // exact beats suffix
		"note":                           "note",
		"trading-api.cancel_order":       "trading-api.cancel_order", // not offered: as written
	} {
		if got := resolveTool(script, offered); got != want {
			t.Errorf("resolveTool(%q) = %q, want %q", script, got, want)
		}
	}
}
