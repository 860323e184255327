package compile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
)

func stageCase(t *testing.T, dir string) *Staged {
	t.Helper()
	st, err := Stage(dir, build(t, dir, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The pod's alerts reach cllama in .claw-auth/pod.json (0600), staged and
// applied like providers.json; a change is pending until applied and
// changes cllama's environment so compose recreates it. The operator
// token is made once and kept.
func TestPodSettingsAndOperatorToken(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	t.Setenv("TRADING_API_TOKEN", "t")
	podFile := filepath.Join(dir, "claw-pod.yml")
	src, err := os.ReadFile(podFile)
	if err != nil {
		t.Fatal(err)
	}
	withAlerts := strings.Replace(string(src), "x-claw:\n", "x-claw:\n  alerts: {webhook: 'https://hooks.example/claw', secret: hmac-secret}\n", 1)
	if withAlerts == string(src) {
		t.Fatal("the case has no pod-level x-claw block to add alerts to")
	}
	if st := stageCase(t, dir); !st.Applied {
		t.Fatal("first compile not applied")
	}
	pod, err := manifest.ReadPod(filepath.Join(dir, AuthDir))
	if err != nil || pod.Alerts != nil {
		t.Fatalf("pod.json without alerts: %+v, %v", pod, err)
	}
	tokenPath := filepath.Join(dir, filepath.FromSlash(OperatorTokenFile))
	token, err := os.ReadFile(tokenPath)
	if err != nil || !operatorTokenPattern.MatchString(strings.TrimSpace(string(token))) {
		t.Fatalf("operator token %q, %v", token, err)
	}
	if fi, _ := os.Stat(tokenPath); fi.Mode().Perm() != modeSecret {
		t.Fatalf("operator token mode %v", fi.Mode().Perm())
	}
	before := envOf(t, build(t, dir, Options{}), "CLAW_POD_SETTINGS")

	if err := os.WriteFile(podFile, []byte(withAlerts), 0o644); err != nil {
		t.Fatal(err)
	}
	res := build(t, dir, Options{})
	if after := envOf(t, res, "CLAW_POD_SETTINGS"); after == before || after == "" {
		t.Fatalf("cllama's environment did not change with its settings (%q → %q)", before, after)
	}
	st, err := Stage(dir, res)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(st.Pending, ",") != "pod settings" {
		t.Fatalf("pending %v, want the pod settings only", st.Pending)
	}
	applied, err := Apply(dir)
	if err != nil || !applied.PodSettings || applied.Providers {
		t.Fatalf("applied %+v, %v", applied, err)
	}
	pod, err = manifest.ReadPod(filepath.Join(dir, AuthDir))
	if err != nil || pod.Alerts == nil || pod.Alerts.Webhook != "https://hooks.example/claw" || pod.Alerts.Secret != "hmac-secret" {
		t.Fatalf("pod.json after apply: %+v, %v", pod, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, filepath.FromSlash(PodSettingsFile))); fi.Mode().Perm() != modeSecret {
		t.Fatalf("pod.json mode %v, want 0600 (it holds the webhook's secret)", fi.Mode().Perm())
	}
	again, _ := os.ReadFile(tokenPath)
	if string(again) != string(token) {
		t.Fatal("a recompile changed the operator token")
	}
	for _, f := range res.Output.Files {
		if f.Path == GeneratedFile && strings.Contains(string(f.Data), "hmac-secret") {
			t.Fatal("the webhook's secret is in the compose file")
		}
	}
}

// envOf is the value of name in the compiled cllama's environment.
func envOf(t *testing.T, res *Result, name string) string {
	t.Helper()
	if res.Plan == nil || res.Plan.Cllama == nil {
		t.Fatal("no cllama in the plan")
	}
	if v := Var(res.Plan.Cllama.Env, name); v != nil {
		return v.Value
	}
	return ""
}
