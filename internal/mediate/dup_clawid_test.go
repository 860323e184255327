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
	cases := map[string][2]string{
		"claw_id":  {`{"q":"a","claw_id":"someone"}`, `{"q":"a","claw_id":"someone-else"}`},
		"spelling": {`{"q":"a","CLAW_ID":"someone"}`, `{"q":"a","clawId":"someone-else"}`},
		"absent":   {`{"q":"a"}`, `{"q":"a","Claw-Id":"x"}`},
	}
	for name, args := range cases {
		for _, k := range kits {
			t.Run(name+"/"+string(k.format()), func(t *testing.T) { dupClawID(t, k, args) })
		}
	}
}

func dupClawID(t *testing.T, k kit, args [2]string) {
	h := newHarness(t, k, harnessOptions{})
	h.up.script = []step{
		{Calls: []tcall{call("c1", echo, args[0]), call("c2", echo, args[1])}},
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
}

// History shows a call's arguments as executed, and the model's own beside
// them only when cllama changed them: the claw_id the model wrote is not
// the agent whose data was read.
func TestTraceShowsArgumentsAsExecuted(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			h.up.script = []step{
				{Calls: []tcall{call("c1", echo, `{"q":"a","claw_id":"alpha"}`), call("c2", echo, `{"q":"b","CLAW_ID":"alpha"}`), call("c3", echo, `{"q":"c"}`)}},
				{Text: "done"},
			}
			res := h.post(context.Background(), k.runnerRequest(hello, nil, false, nil))
			if _, err := io.ReadAll(res.Body); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			h.waitEntries(t, 1)
			calls := lastEntry(t, h).ToolTrace[0].ToolCalls
			want := [][2]string{
				{`{"claw_id":"` + h.agent.ID + `","q":"a"}`, `{"claw_id":"alpha","q":"a"}`},
				{`{"q":"b"}`, `{"CLAW_ID":"alpha","q":"b"}`},
				{`{"q":"c"}`, ``},
			}
			for i, w := range want {
				if string(calls[i].Arguments) != w[0] || string(calls[i].ModelArguments) != w[1] {
					t.Errorf("call %d: arguments %s, model_arguments %s; want %s and %q", i+1, calls[i].Arguments, calls[i].ModelArguments, w[0], w[1])
				}
			}
		})
	}
}
