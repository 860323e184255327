package kube

import (
	"strings"
	"testing"
)

// TestBuiltImageNamedForBothEngines: the summary and the README name the
// image a service builds without naming it as each Compose generation
// tags the build, saying which is which; the manifests run Compose v2's.
func TestBuiltImageNamedForBothEngines(t *testing.T) {
	c := compileCase(t, goldenCases["trading-desk"])
	var readme string
	for _, f := range c.m.Files {
		if f.Path == Readme {
			readme = string(f.Data)
		}
	}
	const both = "`claw up` builds it as trading-desk-trading-api with Compose v2, as trading-desk_trading-api with docker-compose 1.x"
	for what, text := range map[string]string{"summary": c.m.Summary("k8s"), "README": readme} {
		if !strings.Contains(text, both) {
			t.Errorf("the %s does not name the build for both engines (%q):\n%s", what, both, text)
		}
	}
	for _, im := range c.m.Images {
		if im.Origin == OriginBuild && (im.Name != "trading-desk-trading-api" || im.ComposeV1Name != "trading-desk_trading-api") {
			t.Errorf("built image %+v", im)
		}
	}
}
