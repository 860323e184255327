package modelsim

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEScriptLoads keeps the documented example honest: the YAML in
// the README's "Scripted model server" section must load and behave as
// described there.
func TestREADMEScriptLoads(t *testing.T) {
	readme, err := os.ReadFile("../../docs/scripted-model.md")
	if err != nil {
		t.Skip("README not found:", err)
	}
	_, section, ok := strings.Cut(string(readme), "# The scripted model server")
	if !ok {
		t.Fatal("README has no Scripted model server section")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("section has no yaml block")
	}
	block, _, _ = strings.Cut(block, "```")
	sc, err := ParseScript([]byte(block))
	if err != nil {
		t.Fatalf("README script: %v", err)
	}
	trade := &Conversation{
		Format: FormatOpenAI, Model: "openai/gpt-4o", LastUserText: "Buy 5 AAPL",
		System: "--- BEGIN FEED: market ---", Tools: []string{"trading-api__execute_trade"},
		allText: []string{"--- BEGIN FEED: market ---", "Buy 5 AAPL"},
	}
	if r := sc.Match(trade); r == nil || r.Name != "executor-trades" {
		t.Fatalf("trade request matched %v", r)
	}
	a := (&Server{}).makeAnswer(trade, sc.Match(trade))
	if a.Calls[0].Name != "trading-api__execute_trade" {
		t.Fatalf("call name %q", a.Calls[0].Name)
	}
	after := &Conversation{Format: FormatOpenAI, ToolResults: []ToolResult{{Name: "trading-api__execute_trade", Content: `{"status":"filled"}`}}}
	if r := sc.Match(after); r == nil || r.Name != "after-trade" {
		t.Fatalf("tool result matched %v", r)
	}
	if r := sc.Match(&Conversation{LastUserText: "hello"}); r == nil || r.Name != "fallback" {
		t.Fatalf("fallback matched %v", r)
	}
}
