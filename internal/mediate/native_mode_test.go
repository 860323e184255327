package mediate

import (
	"context"
	"slices"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// A tool granted in native mode belongs to the runner's MCP client: the
// model loop never presents it, and a model that calls it anyway (by its
// alias or canonical name) is answered wrong_mode, audited, and the
// service is not called. A runner that declares the name itself keeps
// it: runner tools win.
func TestNativeModeToolsStayOutOfTheModelLoop(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			tools := toolsManifest(h.svc.srv.URL, manifest.Policy{})
			for i := range tools.Tools {
				if tools.Tools[i].Name == "svc.big" {
					tools.Tools[i].Mode = manifest.ModeNative
				}
			}
			h.agent.SetTools(tools)
			h.up.script = []step{{Calls: []tcall{call("c1", big, `{}`), call("c2", "svc.big", `{}`)}}, {Text: "ok"}, {Calls: []tcall{call("c9", big, `{}`)}}}
			res := h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, false, nil))
			f := k.decodeFinal(t, res, false)
			if f.Text != "ok" {
				t.Fatalf("final = %+v", f)
			}
			up := h.up.requests()
			if slices.Contains(up[0].Tools, big) || !slices.Contains(up[0].Tools, echo) {
				t.Fatalf("presented tools = %v: want the mediated ones only", up[0].Tools)
			}
			if h.svc.count("big") != 0 {
				t.Fatal("a native-mode tool ran through the model loop")
			}
			for _, r := range up[1].Msgs[2].Results {
				if r.Env.OK || r.Env.Error.Code != toolexec.CodeWrongMode {
					t.Fatalf("result = %+v", r)
				}
			}
			ev := toolEvents(h)
			if len(ev) != 2 || ev[0].Status != toolexec.CodeWrongMode || ev[0].Tool != "svc.big" || ev[0].Service != "svc" {
				t.Fatalf("audit = %+v", ev)
			}

			// The runner declares svc__big itself (say, from its own MCP
			// client): the call is the runner's.
			res = h.post(context.Background(), k.runnerRequest(hello, []string{"shell", big}, false, nil))
			if f := k.decodeFinal(t, res, false); len(f.Calls) != 1 || f.Calls[0].Name != big {
				t.Fatalf("the runner's own tool must come back to it: %+v", f)
			}
		})
	}
}
