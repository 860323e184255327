package pod

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func decodeYAML(t *testing.T, src string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func mustService(t *testing.T, src string) *ServiceClaw {
	t.Helper()
	c, err := DecodeServiceClaw("claw-pod.yml", "svc", decodeYAML(t, src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustPod(t *testing.T, src string) Claw {
	t.Helper()
	c, err := DecodePodClaw("claw-pod.yml", decodeYAML(t, src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGrantDefaultsAndSpread(t *testing.T) {
	defaults := mustPod(t, `
tools-defaults:
  - service: api
    allow: [read]
  - search`)
	none := mustPod(t, `pod: x`)
	for _, tc := range []struct {
		name, svc string
		pod       Claw
		want      []Grant
	}{
		{"omitted inherits", `cllama: passthrough`, defaults,
			[]Grant{{Service: "api", Tools: []string{"read"}}, {Service: "search", All: true}}},
		{"declared replaces", "cllama: passthrough\ntools: [{service: api, allow: [write]}]", defaults,
			[]Grant{{Service: "api", Tools: []string{"write"}}}},
		{"declared empty", "cllama: passthrough\ntools: []", defaults, []Grant{}},
		{"spread unions", "cllama: passthrough\ntools: [{service: api, allow: [write]}, '...', {service: api, allow: [read, admin]}]", defaults,
			[]Grant{{Service: "api", Tools: []string{"admin", "read", "write"}}, {Service: "search", All: true}}},
		{"all wins", "cllama: passthrough\ntools: ['...', {service: api, allow: all}]", defaults,
			[]Grant{{Service: "api", All: true}, {Service: "search", All: true}}},
		{"no defaults, omitted", `cllama: passthrough`, none, []Grant{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustService(t, tc.svc)
			entries, err := ExpandGrants("claw-pod.yml", "svc", &tc.pod, s)
			if err != nil {
				t.Fatal(err)
			}
			got := NormaliseGrants(entries)
			for i := range got {
				got[i].Keys, got[i].NameKeys = nil, nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSpreadWithoutDefaults(t *testing.T) {
	none := mustPod(t, `pod: x`)
	s := mustService(t, "cllama: passthrough\ntools: ['...']")
	_, err := ExpandGrants("claw-pod.yml", "svc", &none, s)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "tools-defaults") {
		t.Fatalf("got %v", err)
	}
	f := mustService(t, "cllama: passthrough\nfeeds: ['...']")
	if _, err := ExpandFeeds("claw-pod.yml", "svc", &none, f); err == nil {
		t.Fatal("feeds spread without defaults accepted")
	}
}

func TestFeedsDefaults(t *testing.T) {
	c := mustPod(t, "feeds-defaults: [alerts, {source: api, path: /p, ttl: 5}]")
	s := mustService(t, "cllama: passthrough\nfeeds: [{source: api, name: other}, '...']")
	got, err := ExpandFeeds("f", "svc", &c, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Name != "other" || got[1].Name != "alerts" || !got[1].Short() || got[2].Path != "/p" || *got[2].TTL != 5 {
		t.Fatalf("got %+v", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, key, want string }{
		{"not a mapping", `[1]`, "x-claw", "must be a mapping"},
		{"tools without cllama", `tools: [api]`, "x-claw.tools", "need the cllama proxy"},
		{"native tools without cllama", `tools: [{service: api, allow: all, mode: native}]`, "x-claw.tools", "native tools are served by cllama's /mcp endpoint"},
		{"some native tools without cllama", `tools: [{service: api, allow: all, mode: native}, b]`, "x-claw.tools", "managed tools need the cllama proxy"},
		{"feeds without cllama", `feeds: [a]`, "x-claw.feeds", "cllama"},
		{"memory is no key of claw", `memory: {}`, "x-claw.memory", "unknown key"},
		{"policy without cllama", `tool-policy: {max-rounds: 2}`, "x-claw.tool-policy", "cllama"},
		{"spread twice", "cllama: p\ntools: ['...', '...']", "x-claw.tools[1]", "appears twice"},
		{"feeds spread twice", "cllama: p\nfeeds: ['...', '...']", "x-claw.feeds[1]", "appears twice"},
		{"all mixed", "cllama: p\ntools: [{service: a, allow: [all, x]}]", "x-claw.tools[0].allow", "mixed"},
		{"allow word", "cllama: p\ntools: [{service: a, allow: some}]", "x-claw.tools[0].allow", "neither"},
		{"allow missing", "cllama: p\ntools: [{service: a}]", "x-claw.tools[0].allow", "required"},
		{"service missing", "cllama: p\ntools: [{allow: all}]", "x-claw.tools[0].service", "required"},
		{"bad service", "cllama: p\ntools: ['a b']", "x-claw.tools[0]", "not a service name"},
		{"bad tool", "cllama: p\ntools: [{service: a, allow: ['x y']}]", "x-claw.tools[0].allow[0]", "not a tool name"},
		{"tools type", "cllama: p\ntools: 3", "x-claw.tools", "must be a list"},
		{"entry type", "cllama: p\ntools: [3]", "x-claw.tools[0]", "must be a mapping"},
		{"feed path no source", "cllama: p\nfeeds: [{path: /a}]", "x-claw.feeds[0].source", "required with path"},
		{"feed path slash", "cllama: p\nfeeds: [{source: a, path: a}]", "x-claw.feeds[0].path", "must start with /"},
		{"feed empty", "cllama: p\nfeeds: [{ttl: 3}]", "x-claw.feeds[0]", "neither path nor name"},
		{"feed ttl", "cllama: p\nfeeds: [{source: a, path: /a, ttl: -1}]", "x-claw.feeds[0].ttl", ">= 0"},
		{"policy zero", "cllama: p\ntool-policy: {max-rounds: 0}", "x-claw.tool-policy.max-rounds", "> 0"},
		{"policy negative", "cllama: p\ntool-policy: {max-tool-result-bytes: -5}", "x-claw.tool-policy.max-tool-result-bytes", "> 0"},
		{"policy type", "cllama: p\ntool-policy: {max-rounds: many}", "x-claw.tool-policy.max-rounds", "integer"},
		{"result-ttl not a duration", "cllama: p\ntool-policy: {result-ttl: soon}", "x-claw.tool-policy.result-ttl", "not a duration"},
		{"result-ttl a number", "cllama: p\ntool-policy: {result-ttl: 30}", "x-claw.tool-policy.result-ttl", "duration string"},
		{"result-ttl too long", "cllama: p\ntool-policy: {result-ttl: 200h}", "x-claw.tool-policy.result-ttl", "out of range"},
		{"count", "count: 0", "x-claw.count", "between 1 and 1000"},
		{"surface", "surfaces: [trading-api]", "x-claw.surfaces[0]", "not a surface URI"},
		{"cllama type", "cllama: {a: b}", "x-claw.cllama", "string"},
		{"mcp-stdio agent", "agent: a.md\nmcp-stdio: {command: npx}", "x-claw.mcp-stdio", "cannot also be an agent"},
		{"mcp-stdio command", "mcp-stdio: {args: [a]}", "x-claw.mcp-stdio.command", "required"},
		{"service-auth", "service-auth: {api: 3}", "x-claw.service-auth.api", "string or a mapping"},
		{"agent type", "agent: [a]", "x-claw.agent", "must be a string"},
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
}

func TestDecodePodErrors(t *testing.T) {
	for _, tc := range []struct{ src, key string }{
		{`tools-defaults: ['...']`, "x-claw.tools-defaults[0]"},
		{`feeds-defaults: ['...']`, "x-claw.feeds-defaults[0]"},
		{`cllama-defaults: {env: [NOEQUALS]}`, "x-claw.cllama-defaults.env[0]"},
		{`cllama-defaults: 3`, "x-claw.cllama-defaults"},
		{`cllama-defaults: {replicas: 0}`, "x-claw.cllama-defaults.replicas"},
		{`cllama-defaults: {replicas: two}`, "x-claw.cllama-defaults.replicas"},
		{`tool-policy: {total-timeout-ms: 0}`, "x-claw.tool-policy.total-timeout-ms"},
		{`pod: [a]`, "x-claw.pod"},
	} {
		_, err := DecodePodClaw("claw-pod.yml", decodeYAML(t, tc.src))
		var e *Error
		if !errors.As(err, &e) || e.Key != tc.key || e.Service != "" {
			t.Errorf("%s: got %v, want key %s", tc.src, err, tc.key)
		}
	}
}

func TestDecodeAcceptsForms(t *testing.T) {
	c := mustPod(t, "pod: desk\ncllama-defaults: {env: [OPENAI_API_KEY=k, X=1=2], image: img, replicas: '3'}\ntool-policy: {max-rounds: '4'}")
	if c.Name != "desk" || c.CllamaDefaults.Env["X"] != "1=2" || c.CllamaDefaults.Image != "img" || c.CllamaDefaults.Replicas != 3 || *c.ToolPolicy.MaxRounds != 4 {
		t.Fatalf("got %+v", c)
	}
	if c := mustPod(t, "pod: desk\ntool-policy: {result-ttl: 30m}"); c.ToolPolicy.ResultTTLMS == nil || *c.ToolPolicy.ResultTTLMS != 30*60*1000 {
		t.Fatalf("result-ttl 30m: %+v", c.ToolPolicy)
	}
	s := mustService(t, "cllama: passthrough\ncount: 2\nservice-auth: {api: tok, other: {token: t2, principal: p}}\nmcp-stdio: null\nsurfaces: ['service://api']")
	if s.Count != 2 || s.ServiceAuth["api"].Token != "tok" || s.ServiceAuth["other"].Principal != "p" || s.Surfaces[0].Target != "api" {
		t.Fatalf("got %+v", s)
	}
}

// Every misspelt key is an error naming the file, the service, the key
// and the nearest known key: in a grant it would fall back to the
// defaults, at service level it would drop the agent's tools, at pod
// level and in the known sub-blocks it would be ignored.
func TestMisspeltKeys(t *testing.T) {
	_, err := DecodeServiceClaw("claw-pod.yml", "analyst", map[string]any{"agent": "a.md", "tools": []any{map[string]any{"service": "notes", "alow": []any{"add_note"}}}})
	if pe := problemAt(err, "x-claw.tools[0].alow"); pe == nil || !strings.Contains(pe.Error(), "did you mean `allow`?") {
		t.Fatalf("grant with a misspelt key: %v", err)
	}
	for _, tc := range []struct{ src, key, near string }{
		{"cllama: p\ntols: [api]", "x-claw.tols", "tools"},
		{"agent: a.md\ntool: []", "x-claw.tool", "tools"},
		{"cllama: p\nmemory: x", "x-claw.memory", ""},
		{"agent: a.md\nzzzzzz: 1", "x-claw.zzzzzz", ""},
		{"mcp-stdio: {command: npx, arg: [x]}", "x-claw.mcp-stdio.arg", "args"},
		{"cllama: p\nservice-auth: {api: {tokn: t}}", "x-claw.service-auth.api.tokn", "token"},
		{"cllama: p\ntool-policy: {max-round: 3}", "x-claw.tool-policy.max-round", "max-rounds"},
		{"cllama: p\nfeeds: [{source: a, path: /a, tll: 3}]", "x-claw.feeds[0].tll", "ttl"},
	} {
		_, err := DecodeServiceClaw("claw-pod.yml", "analyst", decodeYAML(t, tc.src))
		pe := problemAt(err, tc.key)
		if pe == nil || pe.File != "claw-pod.yml" || pe.Service != "analyst" || pe.Problem != "unknown key" {
			t.Errorf("%q: got %v, want an unknown key error at %s", tc.src, err, tc.key)
			continue
		}
		want := "did you mean `" + tc.near + "`?"
		if tc.near == "" {
			want = ""
		}
		if got := strings.Contains(pe.Fix, "did you mean"); got != (want != "") || !strings.Contains(pe.Fix, want) {
			t.Errorf("%q: fix %q, want the hint %q", tc.src, pe.Fix, want)
		}
	}
	for _, tc := range []struct{ src, key, near string }{
		{"tols-defaults: []", "x-claw.tols-defaults", "tools-defaults"},
		{"cllama-defaults: {imge: x}", "x-claw.cllama-defaults.imge", "image"},
	} {
		_, err := DecodePodClaw("claw-pod.yml", decodeYAML(t, tc.src))
		pe := problemAt(err, tc.key)
		if pe == nil || pe.Service != "" || !strings.Contains(pe.Fix, "did you mean `"+tc.near+"`?") {
			t.Errorf("%q: got %v, want an unknown key error at %s suggesting %s", tc.src, err, tc.key, tc.near)
		}
	}
}

// A service with several problems reports all of them, the unknown key
// with the others.
func TestServiceProblemsTogether(t *testing.T) {
	_, err := DecodeServiceClaw("claw-pod.yml", "a", decodeYAML(t, "agent: a.md\ntols: [api]\ncount: 0\nfeeds: [x]"))
	for _, key := range []string{"x-claw.tols", "x-claw.count", "x-claw.feeds"} {
		if problemAt(err, key) == nil {
			t.Errorf("no problem at %s in %v", key, err)
		}
	}
}

// An entry's mode: wins; an entry without one takes x-claw.tools-mode, and
// without that is mediated, in the service's list and in the defaults
// alike.
func TestToolModes(t *testing.T) {
	for _, tc := range []struct {
		name, pod, svc string
		want           map[string]string // "<service>.<tool>" -> mode
	}{
		{"default is mediated", "tools-defaults: [{service: api, allow: [read]}]",
			"cllama: p\ntools: ['...', {service: api, allow: [write]}]",
			map[string]string{"api.read": "mediated", "api.write": "mediated"}},
		{"pod-wide native", "tools-mode: native\ntools-defaults: [{service: api, allow: [read]}]",
			"cllama: p\ntools: ['...', {service: api, allow: [write]}, search]",
			map[string]string{"api.read": "native", "api.write": "native", "search.any": "native"}},
		{"entry overrides pod-wide", "tools-mode: native",
			"cllama: p\ntools: [{service: api, allow: [write], mode: mediated}, {service: api, allow: [read]}]",
			map[string]string{"api.read": "native", "api.write": "mediated"}},
		{"defaults entry keeps its mode", "tools-defaults: [{service: api, allow: [read], mode: native}]",
			"cllama: p",
			map[string]string{"api.read": "native"}},
		{"same mode twice is fine", "tools-mode: native\ntools-defaults: [{service: api, allow: all}]",
			"cllama: p\ntools: ['...', {service: api, allow: [read], mode: native}]",
			map[string]string{"api.read": "native", "api.write": "native"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustPod(t, tc.pod)
			s := mustService(t, tc.svc)
			entries, err := ExpandGrants("claw-pod.yml", "svc", &c, s)
			if err != nil {
				t.Fatal(err)
			}
			for tool, want := range tc.want {
				target, name, _ := strings.Cut(tool, ".")
				got, err := ToolMode("claw-pod.yml", "svc", &c, entries, target, name)
				if err != nil || got != want {
					t.Errorf("%s: got %q, %v; want %q", tool, got, err, want)
				}
			}
		})
	}
}

// A tool granted in two modes is an error at the second entry that names
// the first and says to pick one mode; a tool granted in one mode by one
// entry is unaffected by another entry's mode for other tools.
func TestToolModeConflict(t *testing.T) {
	c := mustPod(t, "tools-defaults: [{service: api, allow: all}]")
	s := mustService(t, "cllama: p\ntools: ['...', {service: api, allow: [write], mode: native}]")
	entries, err := ExpandGrants("claw-pod.yml", "svc", &c, s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ToolMode("claw-pod.yml", "svc", &c, entries, "api", "write")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want *Error", err)
	}
	if e.File != "claw-pod.yml" || e.Service != "svc" || e.Key != "x-claw.tools[1]" ||
		!strings.Contains(e.Problem, `"api.write"`) || !strings.Contains(e.Problem, "as native here and as mediated by x-claw.tools-defaults[0]") ||
		!strings.Contains(e.Fix, "pick one mode") || !strings.Contains(e.Fix, "x-claw.tools-defaults[0] and x-claw.tools[1]") {
		t.Fatalf("got %+v", e)
	}
	if m, err := ToolMode("claw-pod.yml", "svc", &c, entries, "api", "read"); err != nil || m != "mediated" {
		t.Fatalf("read: %q %v", m, err)
	}
}

// A mode that is neither mediated nor native is an error naming the key,
// suggesting the nearest mode; absent or null is the default.
func TestToolModeErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, key, problem, fix string }{
		{"misspelt", "cllama: p\ntools: [{service: a, allow: all, mode: natve}]", "x-claw.tools[0].mode", `"natve" is not a tool mode`, "did you mean `native`? write `mode: mediated`"},
		{"case", "cllama: p\ntools: [{service: a, allow: all, mode: Native}]", "x-claw.tools[0].mode", `"Native" is not a tool mode`, "did you mean `native`?"},
		{"other word", "cllama: p\ntools: [{service: a, allow: all, mode: mcp}]", "x-claw.tools[0].mode", `"mcp" is not a tool mode`, "write `mode: mediated`"},
		{"not a string", "cllama: p\ntools: [{service: a, allow: all, mode: [native]}]", "x-claw.tools[0].mode", "a list is not a tool mode", "`mode: native`"},
		{"misspelt key", "cllama: p\ntools: [{service: a, allow: all, modes: native}]", "x-claw.tools[0].modes", "unknown key", "did you mean `mode`?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeServiceClaw("claw-pod.yml", "svc", decodeYAML(t, tc.src))
			var e *Error
			if !errors.As(err, &e) || e.File != "claw-pod.yml" || e.Service != "svc" || e.Key != tc.key ||
				!strings.Contains(e.Problem, tc.problem) || !strings.Contains(e.Fix, tc.fix) {
				t.Fatalf("got %+v (%v)", e, err)
			}
		})
	}
	for _, tc := range []struct{ src, problem, fix string }{
		{"tools-mode: mediatd", `"mediatd" is not a tool mode`, "did you mean `mediated`? write `tools-mode: mediated`"},
		{"tools-mode: true", "a boolean is not a tool mode", "`tools-mode: native`"},
		{"tools-defaults: [{service: a, allow: all, mode: x}]", `"x" is not a tool mode`, "`mode: native`"},
	} {
		_, err := DecodePodClaw("claw-pod.yml", decodeYAML(t, tc.src))
		var e *Error
		if !errors.As(err, &e) || e.File != "claw-pod.yml" || e.Service != "" || !strings.Contains(e.Problem, tc.problem) || !strings.Contains(e.Fix, tc.fix) {
			t.Errorf("%s: got %+v (%v)", tc.src, e, err)
		}
	}
	if c := mustPod(t, "tools-mode: null"); c.ToolsMode != "" || c.EntryMode(GrantEntry{}) != "mediated" {
		t.Errorf("null tools-mode: %+v", c)
	}
	if s := mustService(t, "cllama: p\ntools: [{service: a, allow: all, mode: null}]"); s.Tools[0].Mode != "" {
		t.Errorf("null mode: %+v", s.Tools[0])
	}
}

// problemAt is the problem err reports at key, if any.
func problemAt(err error, key string) *Error {
	var many Errors
	if errors.As(err, &many) {
		for _, p := range many {
			if p.Key == key {
				return p
			}
		}
		return nil
	}
	var one *Error
	if errors.As(err, &one) && one.Key == key {
		return one
	}
	return nil
}

// Every problem of one service is reported in one run, sorted by key.
func TestEveryProblemOfAService(t *testing.T) {
	_, err := DecodeServiceClaw("claw-pod.yml", "analyst", map[string]any{
		"cllama": "passthrough", "count": 0, "egress": "maybe",
		"tools": []any{map[string]any{"service": "notes", "allow": "some"}},
		"feeds": 5,
	})
	var many Errors
	if !errors.As(err, &many) {
		t.Fatalf("want several problems, got %v", err)
	}
	for _, key := range []string{"x-claw.count", "x-claw.egress", "x-claw.tools[0].allow", "x-claw.feeds"} {
		if problemAt(err, key) == nil {
			t.Errorf("no problem reported at %s:\n%v", key, err)
		}
	}
	if !strings.HasPrefix(err.Error(), fmt.Sprintf("%d problems:", len(many))) {
		t.Errorf("message: %v", err)
	}
}
