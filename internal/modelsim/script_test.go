package modelsim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseScriptJSONAndYAML(t *testing.T) {
	js := `{"rules":[{"name":"a","match":{"tools_offered":["svc.t"]},"reply":{"tool_calls":[{"name":"svc.t","arguments":{"x":1}}]}}]}`
	sc, err := ParseScript([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(sc.Rules[0].Reply.ToolCalls[0].args); got != `{"x":1}` {
		t.Fatalf("args %s", got)
	}
	yml := "rules:\n  - reply:\n      tool_calls:\n        - name: t\n          arguments: '{ \"y\" : [1, 2] }'\n"
	sc, err = ParseScript([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	r := sc.Rules[0]
	if r.Name != "rule 1" || string(r.Reply.ToolCalls[0].args) != `{"y":[1,2]}` {
		t.Fatalf("rule %+v args %s", r, r.Reply.ToolCalls[0].args)
	}
	if string(mustParse(t, "rules: [{reply: {tool_calls: [{name: t}]}}]").Rules[0].Reply.ToolCalls[0].args) != "{}" {
		t.Fatal("missing arguments should be {}")
	}
}

func mustParse(t *testing.T, s string) *Script {
	t.Helper()
	sc, err := ParseScript([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestParseScriptErrors(t *testing.T) {
	for name, tc := range map[string]struct{ script, want string }{
		"empty":          {"", "empty script"},
		"no rules":       {"rules: []", "no rules"},
		"unknown field":  {"rules: [{name: a, reply: {text: x}, mach: {}}]", "mach"},
		"typo in match":  {"rules: [{name: a, match: {user_contain: x}, reply: {text: x}}]", "user_contain"},
		"empty reply":    {"rules: [{name: a}]", `rule "a": reply needs`},
		"bad regex":      {"rules: [{name: a, match: {user_regex: '('}, reply: {text: x}}]", "user_regex"},
		"bad format":     {"rules: [{name: a, match: {format: gemini}, reply: {text: x}}]", "gemini"},
		"two defaults":   {"rules: [{name: a, default: true, reply: {text: x}}, {name: b, default: true, reply: {text: y}}]", "both default"},
		"args array":     {"rules: [{name: a, reply: {tool_calls: [{name: t, arguments: [1]}]}}]", "JSON object"},
		"args bad json":  {"rules: [{name: a, reply: {tool_calls: [{name: t, arguments: '{x'}]}}]", "JSON object"},
		"call no name":   {"rules: [{name: a, reply: {tool_calls: [{arguments: {}}]}}]", "name is required"},
		"error and text": {"rules: [{name: a, reply: {text: x, error: {status: 500, message: m}}}]", "either an error"},
		"error status":   {"rules: [{name: a, reply: {error: {status: 200, message: m}}}]", "400-599"},
		"not a mapping":  {"- a\n- b\n", "parse script"},
	} {
		_, err := ParseScript([]byte(tc.script))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, tc.want)
		}
	}
}

func TestLoadScript(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(p, []byte("rules: [{name: a, reply: {text: x}}]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScript(p); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScript(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Fatal("missing file loaded")
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("rules: [{name: a}]"), 0o644)
	if _, err := LoadScript(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Fatalf("error %v should name the file", err)
	}
}
