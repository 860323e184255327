package manifest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// withRules is validTools with rules, the tool naming when.
func withRules(rules, when string) []byte {
	s := strings.Replace(validTools, `"policy": {"max_rounds": 3}`, `"policy": {"max_rounds": 3}, "rules": `+rules, 1)
	if when != "" {
		s = strings.Replace(s, `"description": "ctx",`, `"description": "ctx", "when": `+when+`,`, 1)
	}
	return []byte(s)
}

func TestParseToolsRules(t *testing.T) {
	m, err := ParseTools(withRules(`[{"id":"r1","when":"true","source":"claw-pod.yml: x-claw.tools[0].when"},{"id":"r2","when":"false"}]`, `["r2","r1"]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rules) != 2 || m.Rules[0] != (Rule{ID: "r1", When: "true", Source: "claw-pod.yml: x-claw.tools[0].when"}) || !slices.Equal(m.Tools[0].When, []string{"r2", "r1"}) {
		t.Fatalf("got rules %+v, when %v", m.Rules, m.Tools[0].When)
	}
	// No rules, no when: always available, and nothing written.
	plain, err := ParseTools([]byte(validTools))
	if err != nil || plain.Rules != nil || plain.Tools[0].When != nil {
		t.Fatalf("plain: %+v, %v", plain, err)
	}
	out, _ := json.Marshal(plain)
	if strings.Contains(string(out), `"rules"`) || strings.Contains(string(out), `"when"`) {
		t.Fatalf("empty rules or when written: %s", out)
	}
	for _, tc := range []struct{ rules, when, want string }{
		{`[{"id":"r1","when":"true"}]`, `["r2"]`, `tools[0].when[0]: "r2" names no rule`},
		{`[]`, `["r1"]`, `tools[0].when[0]: "r1" names no rule`},
		{`[{"id":"r1","when":"true"},{"id":"r1","when":"false"}]`, "", `rules[1].id: "r1" duplicates rules[0]`},
		{`[{"id":"","when":"true"}]`, "", "rules[0]: id and when are required"},
		{`[{"id":"r1","when":" "}]`, "", "rules[0]: id and when are required"},
		{`{"r1":"true"}`, "", "rules"},
	} {
		if _, err := ParseTools(withRules(tc.rules, tc.when)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rules %s, when %s: got %v, want %q", tc.rules, tc.when, err, tc.want)
		}
	}
}
