package compile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// toolsOf is agent's compiled tools.json.
func toolsOf(t *testing.T, res *Result, agent string) *manifest.Tools {
	t.Helper()
	for _, f := range res.Output.Files {
		if strings.HasSuffix(f.Path, "/"+agent+"/tools.json") {
			m, err := manifest.ParseTools(f.Data)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no tools.json for %s", agent)
	return nil
}

// approve: on an entry, tool-policy approve-destructive (for the tools
// annotated destructiveHint) and approval-timeout reach tools.json, each
// approval naming where it was written; other tools are not held.
func TestApprovalsCompileIntoToolsJSON(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	editPod(t, dir, "          allow: all\n", "          allow: all\n          approve: 'args.quantity >= 50'\n")
	editPod(t, dir, "        max-rounds: 4\n", "        max-rounds: 4\n        approve-destructive: true\n        approval-timeout: 90s\n")
	desc := filepath.Join(dir, "trading-api", ".claw-describe.json")
	editFile(t, desc, `"http": { "method": "POST", "path": "/api/v1/trades", "body": "json" }`, `"http": { "method": "POST", "path": "/api/v1/trades", "body": "json" }, "annotations": {"destructiveHint": true}`)
	res := build(t, dir, Options{})
	m := toolsOf(t, res, "executor")
	// The summary claw compile prints says which calls wait for a person.
	if sum := Summary(res); !strings.Contains(sum, "approval args.quantity >= 50 or always]") {
		t.Errorf("summary does not show the approval rules:\n%s", sum)
	}
	if m.Policy.ApprovalTimeoutMS != 90000 {
		t.Errorf("approval_timeout_ms %d", m.Policy.ApprovalTimeoutMS)
	}
	for _, tool := range m.Tools {
		switch tool.Name {
		case "trading-api.execute_trade":
			if len(tool.Approve) != 2 || tool.Approve[0].When != "args.quantity >= 50" || !strings.Contains(tool.Approve[0].Source, `service "executor": x-claw.tools[1].approve`) ||
				!tool.Approve[1].Always || !strings.Contains(tool.Approve[1].Source, "approve-destructive") {
				t.Errorf("execute_trade approve %+v", tool.Approve)
			}
		case "trading-api.get_market_context":
			// Granted by the defaults too, and by the entry with approve:.
			if len(tool.Approve) != 1 || tool.Approve[0].When == "" {
				t.Errorf("get_market_context approve %+v", tool.Approve)
			}
		}
	}
	if a := toolsOf(t, build(t, dir, Options{}), "analyst"); len(a.Tools[0].Approve) != 0 || a.Policy.ApprovalTimeoutMS != 0 {
		t.Errorf("analyst: %+v", a.Tools[0])
	}
}

// editFile replaces old with repl in file p.
func editFile(t *testing.T, p, old, repl string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), old, repl, 1)
	if edited == string(data) {
		t.Fatalf("%s changed; update the edit of %q", p, old)
	}
	mustWrite(t, p, []byte(edited))
}
