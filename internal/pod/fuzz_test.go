package pod

import (
	"errors"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzDecodeXClaw feeds arbitrary YAML to both x-claw decoders and the
// defaults expansion: they must never panic, and every failure must be a
// *Error naming the file.
func FuzzDecodeXClaw(f *testing.F) {
	for _, s := range []string{
		"pod: desk\ntools-defaults: [{service: api, allow: [read]}]\nfeeds-defaults: [alerts]\ntool-policy: {max-rounds: 3}",
		"cllama: passthrough\ntools: ['...', {service: api, allow: all}, api]\nfeeds: [a, {source: s, path: /p, ttl: 1, name: n}]",
		"agent: a.md\nsurfaces: ['service://x']\ncount: 3\nservice-auth: {api: t}",
		"mcp-stdio: {command: npx, args: [-y, 1, true]}",
		"tool-policy: {timeout-per-tool-ms: 5, total-timeout-ms: 1}",
		"cllama: passthrough\negress: true\nrunner-env: {LLM_BASE_URL: openai-base-url, K: token}",
		"runner-env: {A: anthropic-base-url}\negress: 'false'",
		"tools-mode: native\ntools-defaults: [{service: api, allow: [read], mode: mediated}]\ntools: ['...', {service: api, allow: all, mode: native}]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if yaml.Unmarshal(data, &v) != nil {
			return
		}
		claw, perr := DecodePodClaw("claw-pod.yml", v)
		checkErr(t, perr)
		svc, serr := DecodeServiceClaw("claw-pod.yml", "svc", v)
		checkErr(t, serr)
		if perr == nil && serr == nil {
			if g, err := ExpandGrants("claw-pod.yml", "svc", &claw, svc); err == nil {
				for _, n := range NormaliseGrants(g) {
					if n.All && len(n.Tools) > 0 {
						t.Fatalf("normalised grant has all and names: %+v", n)
					}
					for _, name := range append([]string{"any"}, n.Tools...) {
						mode, err := ToolMode("claw-pod.yml", "svc", &claw, g, n.Service, name)
						checkErr(t, err)
						if err == nil && mode != "mediated" && mode != "native" {
							t.Fatalf("tool %s.%s has mode %q", n.Service, name, mode)
						}
					}
				}
			} else {
				checkErr(t, err)
			}
			_, err := ExpandFeeds("claw-pod.yml", "svc", &claw, svc)
			checkErr(t, err)
		}
	})
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if err != nil && (!errors.As(err, &e) || e.File != "claw-pod.yml") {
		t.Fatalf("error is not a *Error naming the file: %v", err)
	}
}
