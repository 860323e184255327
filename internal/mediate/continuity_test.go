package mediate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/continuity"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// roles summarises a transcript for comparison: role plus call or result ids.
func roles(msgs []tmsg) string {
	var parts []string
	for _, m := range msgs {
		s := m.Role
		for _, c := range m.Calls {
			s += ":" + c.ID
		}
		for _, r := range m.Results {
			s += ":" + r.ID
		}
		if m.Text != "" && len(m.Calls) == 0 && m.Role != "tool" {
			s += "(" + m.Text + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func turn1Script() []step {
	return []step{{Calls: []tcall{call("c1", echo, `{"q":"a"}`)}}, {Text: "answer1"}}
}

func TestContinuityAcrossTurnsAndRestart(t *testing.T) {
	for _, k := range kits {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", k.format(), stream), func(t *testing.T) {
				h := newHarness(t, k, harnessOptions{})
				h.up.script = append(turn1Script(), step{Text: "answer2"}, step{Text: "other"}, step{Text: "answer2 again"})
				ctx := context.Background()
				k.decodeFinal(t, h.post(ctx, k.runnerRequest([]tmsg{{Role: "user", Text: "q1"}}, []string{"shell"}, stream, nil)), stream)

				// Turn 2, answer re-serialised differently by the runner.
				turn2 := []tmsg{{Role: "user", Text: "q1"}, {Role: "assistant", Text: "answer1", Alt: true}, {Role: "user", Text: "q2"}}
				if f := k.decodeFinal(t, h.post(ctx, k.runnerRequest(turn2, []string{"shell"}, stream, nil)), stream); f.Text != "answer2" {
					t.Fatalf("turn 2 answer %q", f.Text)
				}
				up := h.up.requests()
				want := "user(q1) assistant:c1 tool:c1 assistant(answer1) user(q2)"
				if got := roles(up[2].Msgs); got != want {
					t.Errorf("turn 2 upstream transcript:\n got %s\nwant %s", got, want)
				}

				// Another conversation with the same answer text: untouched.
				other := []tmsg{{Role: "user", Text: "different"}, {Role: "assistant", Text: "answer1"}, {Role: "user", Text: "q2"}}
				k.decodeFinal(t, h.post(ctx, k.runnerRequest(other, []string{"shell"}, stream, nil)), stream)
				if got := roles(h.up.requests()[3].Msgs); got != "user(different) assistant(answer1) user(q2)" {
					t.Errorf("other conversation got hidden rounds: %s", got)
				}

				// Restart: a new Mediator over the same state directory.
				h.med = h.newMediator(harnessOptions{})
				k.decodeFinal(t, h.post(ctx, k.runnerRequest(turn2, []string{"shell"}, stream, nil)), stream)
				if got := roles(h.up.requests()[4].Msgs); got != want {
					t.Errorf("after restart:\n got %s\nwant %s", got, want)
				}
				if n := h.med.opt.Continuity.(continuity.Sizer).Len(); n != 1 {
					t.Errorf("%d continuity entries, want the one turn with hidden rounds", n)
				}
				for _, name := range []string{logName, lockName} {
					if fi, err := os.Stat(filepath.Join(h.stateDir, name)); err != nil || fi.Mode().Perm() != 0o600 {
						t.Errorf("state file %s: %v", name, err)
					}
				}
			})
		}
	}
}

// A hidden transcript over the store's per-entry cap is not kept, and the
// audit says so; the turn itself is answered as usual.
func TestContinuityEntryTooLargeIsAudited(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{maxEntryBytes: 64 << 10})
			big := fmt.Sprintf(`{"q":%q}`, strings.Repeat("y", 100<<10))
			h.up.script = []step{{Calls: []tcall{call("c1", echo, big)}}, {Text: "answer1"}, {Text: "answer2"}}
			ctx := context.Background()
			if f := k.decodeFinal(t, h.post(ctx, k.runnerRequest([]tmsg{{Role: "user", Text: "q1"}}, nil, false, nil)), false); f.Text != "answer1" {
				t.Fatalf("answer %q", f.Text)
			}
			h.waitEntries(t, 1)
			var found bool
			for _, e := range h.audit.events() {
				if e.Type == "error" && strings.Contains(e.Error, "continuity not kept") && strings.Contains(e.Error, "65536") {
					found = true
				}
			}
			if !found || h.med.opt.Continuity.(continuity.Sizer).Len() != 0 {
				t.Fatalf("no audit event for the dropped hidden round (%d entries kept): %+v", h.med.opt.Continuity.(continuity.Sizer).Len(), h.audit.events())
			}
			turn2 := []tmsg{{Role: "user", Text: "q1"}, {Role: "assistant", Text: "answer1"}, {Role: "user", Text: "q2"}}
			k.decodeFinal(t, h.post(ctx, k.runnerRequest(turn2, nil, false, nil)), false)
			if got := roles(h.up.requests()[2].Msgs); got != "user(q1) assistant(answer1) user(q2)" {
				t.Errorf("turn 2 transcript %s", got)
			}
		})
	}
}

// Issue 20: two conversations of one agent whose visible transcripts are
// identical (a templated prompt, the same answer text) must not share
// hidden rounds. Nothing the runner sends back tells them apart, so the
// key they share restores neither.
func TestIdenticalConversationsDoNotShareContinuity(t *testing.T) {
	for _, k := range kits {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", k.format(), stream), func(t *testing.T) {
				h := newHarness(t, k, harnessOptions{})
				h.up.script = []step{
					{Calls: []tcall{call("cA", echo, `{"q":"conversation A"}`)}}, {Text: "report ready"},
					{Calls: []tcall{call("cB", echo, `{"q":"conversation B"}`)}}, {Text: "report ready"},
					{Text: "details"},
				}
				ctx := context.Background()
				first := []tmsg{{Role: "user", Text: "daily report"}}
				for range 2 {
					if f := k.decodeFinal(t, h.post(ctx, k.runnerRequest(first, nil, stream, nil)), stream); f.Text != "report ready" {
						t.Fatalf("answer %q", f.Text)
					}
				}
				h.waitEntries(t, 2)
				next := []tmsg{{Role: "user", Text: "daily report"}, {Role: "assistant", Text: "report ready"}, {Role: "user", Text: "details?"}}
				k.decodeFinal(t, h.post(ctx, k.runnerRequest(next, nil, stream, nil)), stream)
				if got := roles(h.up.requests()[4].Msgs); got != "user(daily report) assistant(report ready) user(details?)" {
					t.Errorf("conversation A's next turn went upstream as\n %s\nwant no hidden round (cB is conversation B's)", got)
				}
				var audited bool
				for _, e := range h.audit.events() {
					audited = audited || (e.Type == "error" && strings.Contains(e.Error, "continuity not kept") && strings.Contains(e.Error, "same visible transcript"))
				}
				if !audited {
					t.Error("no audit event for the ambiguous continuity key")
				}
			})
		}
	}
}

func TestHandoffInsertsHiddenRoundsBeforeNativeCall(t *testing.T) {
	for _, k := range kits {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", k.format(), stream), func(t *testing.T) {
				h := newHarness(t, k, harnessOptions{})
				h.up.script = []step{
					{Calls: []tcall{call("c1", echo, `{"q":"a"}`)}},
					{Calls: []tcall{call("n1", "shell", `{"cmd":"ls"}`)}},
					{Text: "done"},
					{Text: "next"},
				}
				ctx := context.Background()
				f := k.decodeFinal(t, h.post(ctx, k.runnerRequest([]tmsg{{Role: "user", Text: "q1"}}, []string{"shell"}, stream, nil)), stream)
				if len(f.Calls) != 1 || f.Calls[0].ID != "n1" {
					t.Fatalf("handed back %+v", f.Calls)
				}
				follow := []tmsg{{Role: "user", Text: "q1"}, {Role: "assistant", Calls: f.Calls}, {Role: "tool", Results: []tresult{{ID: "n1", Raw: "a.txt"}}}}
				if f := k.decodeFinal(t, h.post(ctx, k.runnerRequest(follow, []string{"shell"}, stream, nil)), stream); f.Text != "done" {
					t.Fatalf("follow-up answer %q", f.Text)
				}
				want := "user(q1) assistant:c1 tool:c1 assistant:n1 tool:n1"
				if got := roles(h.up.requests()[2].Msgs); got != want {
					t.Errorf("follow-up upstream transcript:\n got %s\nwant %s", got, want)
				}
				next := append(follow, tmsg{Role: "assistant", Text: "done"}, tmsg{Role: "user", Text: "q2"})
				k.decodeFinal(t, h.post(ctx, k.runnerRequest(next, []string{"shell"}, stream, nil)), stream)
				if got := roles(h.up.requests()[3].Msgs); got != want+" assistant(done) user(q2)" {
					t.Errorf("later turn transcript: %s", got)
				}
			})
		}
	}
}

func TestKeepaliveThenStream(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{keepalive: 20 * time.Millisecond})
			h.up.script = []step{{Calls: []tcall{call("c1", slow, `{}`)}}, {Text: "late answer", Usage: u(3, 4)}}
			res := h.post(context.Background(), k.runnerRequest(hello, nil, true, nil))
			raw, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			s := string(raw)
			first := strings.Index(s, "data:")
			comments := strings.Count(s[:max(first, 0)], "\n: cllama") + boolInt(strings.HasPrefix(s, ": cllama"))
			// The slow tool takes ~150ms: a handful of keepalives, not hundreds.
			if first < 0 || comments < 2 || comments > 30 {
				t.Fatalf("keepalives before data: %d\n%s", comments, s)
			}
			replay := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(s))}
			if f := k.decodeFinal(t, replay, true); f.Text != "late answer" {
				t.Errorf("text %q", f.Text)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{keepalive: 10 * time.Millisecond})
			h.up.script = []step{{Hold: true}}
			ctx, cancel := context.WithCancel(context.Background())
			res := h.post(ctx, k.runnerRequest(hello, nil, true, nil))
			buf := make([]byte, 16)
			if _, err := res.Body.Read(buf); err != nil { // the first keepalive
				t.Fatal(err)
			}
			cancel()
			deadline := time.Now().Add(5 * time.Second)
			canceled := func() int {
				h.up.mu.Lock()
				defer h.up.mu.Unlock()
				return h.up.canceled
			}
			for (len(h.hist.all()) == 0 || canceled() == 0) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			e := h.hist.all()
			if len(e) != 1 || e[0].Status != "error" || e[0].StatusCode != 499 {
				t.Fatalf("history %+v", e)
			}
			if canceled() != 1 {
				t.Errorf("upstream call not canceled")
			}
		})
	}
}

func TestClientDisconnectCancelsToolCall(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{keepalive: 10 * time.Millisecond})
			h.agent.Tools.Tools[1].Execution.TimeoutMS = 0 // svc.slow now waits the policy's 30s
			h.up.script = []step{{Calls: []tcall{call("c1", slow, `{}`)}}}
			ctx, cancel := context.WithCancel(context.Background())
			res := h.post(ctx, k.runnerRequest(hello, nil, true, nil))
			buf := make([]byte, 16)
			if _, err := res.Body.Read(buf); err != nil {
				t.Fatal(err)
			}
			for h.svc.count("slow") == 0 { // the call is in flight
				waitABit()
			}
			start := time.Now()
			cancel()
			h.waitEntries(t, 1)
			for h.svc.count("slow-canceled") == 0 && time.Since(start) < 4*time.Second {
				waitABit()
			}
			if h.svc.count("slow-canceled") != 1 || time.Since(start) > 4*time.Second {
				t.Fatalf("the service call was not canceled")
			}
			e := h.hist.all()[0]
			if e.Status != "error" || len(e.ToolTrace) != 1 || !strings.Contains(string(e.ToolTrace[0].ToolCalls[0].Result), `"ok":false`) {
				t.Errorf("history %+v", e)
			}
		})
	}
}

func TestLegacyFunctionsNormalised(t *testing.T) {
	k := openaiKit{}
	h := newHarness(t, k, harnessOptions{})
	h.up.script = []step{{Text: "ok"}}
	extra := map[string]any{
		"functions":     []any{map[string]any{"name": "shell", "parameters": map[string]any{"type": "object"}}},
		"function_call": map[string]any{"name": "svc.echo"},
	}
	k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(hello, nil, false, extra)), false)
	up := h.up.requests()[0]
	if !slices.Equal(up.Tools, []string{"shell", echo, slow, big, add}) || up.ToolChoice != echo {
		t.Errorf("tools %v choice %q", up.Tools, up.ToolChoice)
	}
	if strings.Contains(string(up.Raw), `"functions"`) || strings.Contains(string(up.Raw), `"function_call"`) {
		t.Errorf("legacy fields kept: %s", up.Raw)
	}
}

func TestRunnerToolNamedLikeAnAliasKeepsItsName(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			h.up.script = []step{{Calls: []tcall{call("n1", echo, `{}`)}}}
			f := k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(hello, []string{echo}, false, nil)), false)
			if len(f.Calls) != 1 || f.Calls[0].Name != echo || h.svc.count("echo") != 0 {
				t.Errorf("runner's own %s was not handed back: %+v", echo, f.Calls)
			}
			tools := h.up.requests()[0].Tools
			if len(tools) != 5 || tools[0] != echo || !strings.HasPrefix(tools[1], echo+"_") {
				t.Errorf("tools %v", tools)
			}
		})
	}
}

func TestUnknownFieldsKept(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			h.up.script = []step{{Text: "ok"}}
			extra := map[string]any{"metadata": map[string]any{"user_id": "u-1", "nested": []any{1.5, "x"}}, "temperature": 0.25}
			k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(hello, nil, false, extra)), false)
			raw := string(h.up.requests()[0].Raw)
			for _, want := range []string{`"metadata":{"nested":[1.5,"x"],"user_id":"u-1"}`, `"temperature":0.25`} {
				if !strings.Contains(raw, want) {
					t.Errorf("upstream body lacks %s: %s", want, raw)
				}
			}
		})
	}
}

func TestMalformedManifestIs500(t *testing.T) {
	k := openaiKit{}
	h := newHarness(t, k, harnessOptions{})
	h.agent.ToolsErr = fmt.Errorf("tools.json: tools[0].name: bad")
	res := h.post(context.Background(), k.runnerRequest(hello, nil, false, nil))
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 500 || !strings.Contains(string(b), "tools[0].name") {
		t.Errorf("%d %s", res.StatusCode, b)
	}
	_ = manifest.DefaultPolicy
}

type panicRunner struct{}

func (panicRunner) Run(context.Context, toolexec.Call) toolexec.Envelope { panic("boom") }

func TestRunnerPanicIsAToolError(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{runner: panicRunner{}})
			h.up.script = []step{{Calls: []tcall{call("c1", echo, `{"q":"a"}`)}}, {Text: "the tool broke"}}
			f := k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(hello, nil, false, nil)), false)
			if f.Text != "the tool broke" {
				t.Fatalf("answer %q", f.Text)
			}
			if env := h.up.requests()[1].Msgs[2].Results[0].Env; env.OK || env.Error.Code != toolexec.CodeToolError {
				t.Errorf("result %+v", env)
			}
		})
	}
}

func TestLoopPanicIsA502(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			body := k.runnerRequest(hello, nil, false, nil)
			x := &exchange.Exchange{ID: "p", Agent: h.agent, Format: k.format(), Original: body, Body: body,
				Send: func(context.Context, []byte) (*http.Response, error) { panic("boom") }}
			w := httptest.NewRecorder()
			h.med.Mediate(w, httptest.NewRequest(http.MethodPost, k.path(), nil), x)
			if w.Code != 502 || !strings.Contains(w.Body.String(), "internal error: boom") {
				t.Errorf("%d %s", w.Code, w.Body)
			}
		})
	}
}
