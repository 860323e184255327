package pod

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every x-claw key the decoder knows, and every key of a grant entry, is
// written in the README's pod grammar example (tool-manifests has its own
// section).
func TestReadmeDocumentsKeys(t *testing.T) {
	data, err := os.ReadFile("../../docs/pod-file.md")
	if err != nil {
		t.Fatal(err)
	}
	services, err := os.ReadFile("../../docs/services.md")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, services...)
	_, rest, ok := strings.Cut(string(data), "## Pod grammar")
	block, _, ok2 := strings.Cut(rest, "\nRules:")
	if !ok || !ok2 {
		t.Fatal("README has no pod grammar section")
	}
	elsewhere := map[string]string{"tool-manifests": "## CKP `Tool` manifests"}
	for _, keys := range [][]string{podKeys, serviceKeys, grantKeys} {
		for _, k := range keys {
			if section, ok := elsewhere[k]; ok {
				if !strings.Contains(string(data), section) || !strings.Contains(string(data), k+":") {
					t.Errorf("README documents %s nowhere", k)
				}
				continue
			}
			if !regexp.MustCompile(`(?m)(^|[\s{,])` + regexp.QuoteMeta(k) + `:`).MatchString(block) {
				t.Errorf("the README's pod grammar example does not write %s:", k)
			}
		}
	}
}

// The README's demo section, the demo script and the example pod's own
// header name as many agents as the example pod runs, and the README
// describes each of them.
func TestReadmeDemoAgentsMatchExamplePod(t *testing.T) {
	p, err := Load(context.Background(), LoadOptions{File: "../../examples/trading-desk/claw-pod.yml", Env: []string{"SIM_PROVIDER_KEY=k", "TRADING_API_TOKEN=t"}})
	if err != nil {
		t.Fatal(err)
	}
	var agents []string
	for _, name := range sortedServiceNames(p.Project) {
		if p.Services[name].IsAgent() {
			agents = append(agents, name)
		}
	}
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	if len(agents) >= len(words) {
		t.Fatalf("%d agents: extend the number words", len(agents))
	}
	count := words[len(agents)]
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "`make demo` needs no registry")
	demo, _, ok2 := strings.Cut(rest, "`make bench`")
	if !ok || !ok2 {
		t.Fatal("README has no demo section")
	}
	counted := regexp.MustCompile(`\b(\w+) (?:governed )?agents\b`)
	for _, doc := range []struct{ name, text string }{
		{"README's demo section", demo},
		{"scripts/demo.sh", readFile(t, "../../scripts/demo.sh")},
		{"the example pod's header", readFile(t, "../../examples/trading-desk/claw-pod.yml")},
	} {
		// The first count of agents in each.
		if m := counted.FindStringSubmatch(doc.text); m == nil || m[1] != count {
			t.Errorf("%s counts the example pod's agents as %q, want %q (%s)", doc.name, m, count, strings.Join(agents, ", "))
		}
	}
	for _, a := range agents {
		if !strings.Contains(demo, "- **"+a+"**") {
			t.Errorf("README's demo section does not describe agent %s", a)
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
