package modelsim

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The trading desk's script reads a kept result by handle: the handle of
// the cut report reaches claw.read_result's arguments ("$result_handle"),
// and the search's answer ends the turn.
func TestTradingDeskScriptReadsByHandle(t *testing.T) {
	raw, err := os.ReadFile("../../examples/trading-desk/model-script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, url := startSim(t, string(raw))
	const handle = "clawres_0123456789abcdef0123456789abcdef01234567"
	tools := `[{"type":"function","function":{"name":"trading-api__get_risk_report","parameters":{"type":"object"}}},` +
		`{"type":"function","function":{"name":"claw__read_result","parameters":{"type":"object"}}}]`
	ask := func(toolName, result string) map[string]any {
		t.Helper()
		content, _ := json.Marshal(result)
		body := `{"model":"scripted-analyst","tools":` + tools + `,"messages":[{"role":"user","content":"Find the breaches in today's risk report."},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"` + toolName + `","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":` + string(content) + `}]}`
		resp, b := postJSON(t, url+"/v1/chat/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		var out struct {
			Choices []struct{ Message map[string]any } `json:"choices"`
		}
		if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
			t.Fatalf("%s (%v)", b, err)
		}
		return out.Choices[0].Message
	}
	msg := ask("trading-api__get_risk_report", `{"ok":true,"data":"RISK REPORT…","truncated":true,"original_bytes":362404,"result_handle":"`+handle+`"}`)
	calls, _ := json.Marshal(msg["tool_calls"])
	if !strings.Contains(string(calls), `claw__read_result`) || !strings.Contains(string(calls), `\"handle\":\"`+handle+`\"`) {
		t.Fatalf("the search does not name the handle: %s", calls)
	}
	msg = ask("claw__read_result", `{"ok":true,"data":{"pattern":"BREACH","matches":[{"offset":123,"text":"01733 book=rates BREACH"}],"count":2,"complete":true}}`)
	if text, _ := msg["content"].(string); !strings.Contains(text, "two breaches") {
		t.Fatalf("answer %q", text)
	}
}
