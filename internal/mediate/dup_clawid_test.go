package mediate

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/clawdapus/clawgo/internal/toolexec"
)

// claw_id is always the agent's own id whatever the model wrote, so two
// calls that differ only in the claw_id the model put in their arguments
// are the same call: the second is a duplicate, not a second execution.
func TestDuplicateIgnoresTheModelsClawID(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			h.up.script = []step{
				{Calls: []tcall{call("c1", echo, `{"q":"a","claw_id":"someone"}`), call("c2", echo, `{"q":"a","claw_id":"someone-else"}`)}},
				{Text: "done"},
			}
			res := h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, false, nil))
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			if n := h.svc.count("echo"); n != 1 {
				t.Errorf("echo ran %d times, want 1", n)
			}
			h.waitEntries(t, 1)
			tr := lastEntry(t, h).ToolTrace
			if len(tr) != 1 || len(tr[0].ToolCalls) != 2 || tr[0].ToolCalls[1].DuplicateOfRound != 1 {
				t.Fatalf("trace = %+v", tr)
			}
			var env toolexec.Envelope
			if err := json.Unmarshal(tr[0].ToolCalls[1].Result, &env); err != nil || env.Error == nil || env.Error.Code != toolexec.CodeDuplicate {
				t.Errorf("second call result = %s", tr[0].ToolCalls[1].Result)
			}
		})
	}
}
