package pod

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A grant entry's when: is a CEL expression, checked where it is written:
// errors name the key and say where in the expression the problem is.
func TestWhenErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, key, want string }{
		{"not a string", "cllama: p\ntools: [{service: a, allow: all, when: 3}]", "x-claw.tools[0].when", "must be a string, got a number"},
		{"a YAML bool", "cllama: p\ntools: [{service: a, allow: all, when: true}]", "x-claw.tools[0].when", "must be a string, got a boolean"},
		{"empty", "cllama: p\ntools: [{service: a, allow: all, when: ''}]", "x-claw.tools[0].when", "empty expression"},
		{"syntax", "cllama: p\ntools: [a, {service: a, allow: all, when: 'now.getHours( >= 9'}]", "x-claw.tools[1].when", "CEL: 1:15: Syntax error"},
		{"unknown variable", "cllama: p\ntools: [{service: a, allow: all, when: 'feed.alerts == 1'}]", "x-claw.tools[0].when", "1:1: undeclared reference to 'feed' (did you mean 'feeds'?)"},
		{"unknown field", "cllama: p\ntools: [{service: a, allow: all, when: 'agent.name == \"x\"'}]", "x-claw.tools[0].when", "undefined field 'name'"},
		{"not a bool", "cllama: p\ntools: [{service: a, allow: all, when: 'session.rounds + 1'}]", "x-claw.tools[0].when", "gives int; it must give a bool"},
		{"line and column", "cllama: p\ntools:\n  - service: a\n    allow: all\n    when: |\n      session.rounds < 3 &&\n        tool.nam == \"a.b\"", "x-claw.tools[0].when", "2:7: undefined field 'nam'"},
		{"too long", "cllama: p\ntools: [{service: a, allow: all, when: '" + strings.Repeat("true && ", 600) + "true'}]", "x-claw.tools[0].when", "at most 4096"},
		{"misspelt", "cllama: p\ntools: [{service: a, allow: all, whem: 'true'}]", "x-claw.tools[0].whem", "unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeServiceClaw("claw-pod.yml", "svc", decodeYAML(t, tc.src))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want *Error", err)
			}
			if e.File != "claw-pod.yml" || e.Service != "svc" || e.Key != tc.key || !strings.Contains(e.Problem, tc.want) || e.Fix == "" {
				t.Fatalf("got %+v, want key %q and problem containing %q", e, tc.key, tc.want)
			}
		})
	}
	_, err := DecodeServiceClaw("claw-pod.yml", "svc", decodeYAML(t, "cllama: p\ntools: [{service: a, allow: all, whem: 'true'}]"))
	if err == nil || !strings.Contains(err.Error(), "did you mean `when`?") {
		t.Errorf("misspelt when: %v", err)
	}
	// In the pod defaults: no service, the defaults' key.
	_, err = DecodePodClaw("claw-pod.yml", decodeYAML(t, "tools-defaults: [{service: a, allow: all, when: 'feeds.alerts.level = \"ok\"'}]"))
	var e *Error
	if !errors.As(err, &e) || e.Service != "" || e.Key != "x-claw.tools-defaults[0].when" || !strings.Contains(e.Problem, "CEL: 1:") {
		t.Errorf("defaults: %v", err)
	}
}

// ToolWhen: a tool is available while any entry granting it holds; an
// entry without when: always holds, so the tool has no condition at all.
// A spliced default entry keeps its when: and its key.
func TestToolWhen(t *testing.T) {
	c := mustPod(t, `tools-defaults: [{service: api, allow: [read], when: 'session.rounds < 5'}]`)
	s := mustService(t, `cllama: p
tools:
  - '...'
  - {service: api, allow: [trade], when: '"api.read" in session.called'}
  - {service: api, allow: all, when: 'agent.type == "openclaw"'}
  - {service: api, allow: [write]}
  - {service: other, allow: [trade], when: 'false'}`)
	if s.Tools[1].When != `"api.read" in session.called` || c.ToolsDefaults[0].When != "session.rounds < 5" {
		t.Fatalf("when not decoded: %+v %+v", s.Tools, c.ToolsDefaults)
	}
	entries, err := ExpandGrants("claw-pod.yml", "svc", &c, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target, name string
		want         []WhenRef
	}{
		{"api", "read", []WhenRef{{"session.rounds < 5", "x-claw.tools-defaults[0]"}, {`agent.type == "openclaw"`, "x-claw.tools[2]"}}},
		{"api", "trade", []WhenRef{{`"api.read" in session.called`, "x-claw.tools[1]"}, {`agent.type == "openclaw"`, "x-claw.tools[2]"}}},
		{"api", "list", []WhenRef{{`agent.type == "openclaw"`, "x-claw.tools[2]"}}},
		{"api", "write", nil}, // x-claw.tools[3] grants it unconditionally
		{"other", "trade", []WhenRef{{"false", "x-claw.tools[4]"}}},
	} {
		if got := ToolWhen(entries, tc.target, tc.name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s.%s: got %+v, want %+v", tc.target, tc.name, got, tc.want)
		}
	}
}
