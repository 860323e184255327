package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

var openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func validModelName(s string) bool { return openAIName.MatchString(s) }

func TestModelName(t *testing.T) {
	long := "svc." + strings.Repeat("x", 100)
	for _, c := range []struct{ in, want string }{
		{"trading-api.get_market_context", "trading-api__get_market_context"},
		{"market-data.lookup_symbol", "market-data__lookup_symbol"},
		{"plain_tool", "plain_tool"},
		{"svc.tool.v2", "svc__tool_v2"},
		{"svc.tööl", "svc__t____l"},
		{"", "_"},
	} {
		if got := modelName(c.in); got != c.want {
			t.Errorf("modelName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	got := modelName(long)
	if len(got) != maxToolName || !strings.HasPrefix(got, "svc__xxx") || !validModelName(got) {
		t.Errorf("modelName(long) = %q (%d bytes)", got, len(got))
	}
	if other := modelName(long + "y"); other == got {
		t.Errorf("two long names share %q", got)
	}
}

// TestToolNames: every assigned name is valid for the API, distinct, and
// leads back to its tool, however the tools' names collide after mapping.
func TestToolNames(t *testing.T) {
	type tool struct{ server, name string }
	tools := []tool{
		{"pod", "trading-api.get_market_context"},
		{"pod", "a.b.c"},
		{"pod", "a.b_c"},  // maps like a.b.c
		{"pod", "a__b_c"}, // and so does this one
		{"pod", "save_note"},
		{"pod", "svc." + strings.Repeat("x", 70) + "1"},
		{"pod", "svc." + strings.Repeat("x", 70) + "2"},
		{"pod", strings.Repeat("é", 100)},
		{"other", "trading-api.get_market_context"},
		{"other", "a.b.c"},
	}
	for i := range 50 {
		tools = append(tools, tool{"gen", fmt.Sprintf("svc.%s%d", strings.Repeat("t", 60), i)})
	}
	n := newToolNames("save_note")
	seen := map[string]tool{}
	for _, tl := range tools {
		alias := n.assign(tl.server, tl.name)
		if !validModelName(alias) {
			t.Errorf("%v: model name %q does not match %s", tl, alias, openAIName)
		}
		if prev, dup := seen[alias]; dup {
			t.Errorf("%v and %v share the model name %q", prev, tl, alias)
		}
		seen[alias] = tl
		ref, ok := n.lookup(alias)
		if !ok || ref.Server != tl.server || ref.Name != tl.name {
			t.Errorf("lookup(%q) = %+v, %v; want %v", alias, ref, ok, tl)
		}
	}
	if _, ok := n.lookup("save_note"); ok {
		t.Error("the reserved save_note leads to an MCP tool")
	}
	if got := n.back["trading-api__get_market_context"]; got.Server != "pod" {
		t.Errorf("the first server's tool did not keep the readable name: %+v", got)
	}
	if _, ok := n.lookup("nope__nothing"); ok {
		t.Error("an unassigned name resolved")
	}
}

// TestToolNamesStable: the same tools get the same names in every run.
func TestToolNamesStable(t *testing.T) {
	a, b := newToolNames(), newToolNames()
	for _, name := range []string{"a.b.c", "a.b_c", "x.y"} {
		if x, y := a.assign("s", name), b.assign("s", name); x != y {
			t.Errorf("%s: %q then %q", name, x, y)
		}
	}
}
