package mediate

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// policyHarness is the harness with conditions on svc.big: rule r1 (the
// spec's three examples, one per test) guards it.
func policyHarness(t *testing.T, k kit, when string) *harness {
	h := newHarness(t, k, harnessOptions{})
	tools := toolsManifest(h.svc.srv.URL, manifest.Policy{})
	tools.Rules = []manifest.Rule{{ID: "r1", When: when, Source: "claw-pod.yml: service \"analyst\": x-claw.tools[1].when"}}
	for i := range tools.Tools {
		if tools.Tools[i].Name == "svc.big" {
			tools.Tools[i].When = []string{"r1"}
		}
	}
	h.agent.SetTools(tools)
	return h
}

func offered(up upReq) bool { return slices.Contains(up.Tools, big) }

// Time of day: the tool is offered only during market hours in New York,
// with an injected clock.
func TestPolicyTimeOfDay(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := policyHarness(t, k, `now.getDayOfWeek("America/New_York") in [1,2,3,4,5] && now.getHours("America/New_York") >= 9 && now.getHours("America/New_York") < 16`)
			h.up.script = []step{{Text: "a"}, {Text: "b"}}
			clock := time.Date(2026, 11, 24, 10, 30, 0, 0, ny)
			h.med.opt.Now = func() time.Time { return clock }
			k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, false, nil)), false)
			clock = time.Date(2026, 11, 24, 18, 0, 0, 0, ny)
			k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, false, nil)), false)
			up := h.up.requests()
			if !offered(up[0]) || offered(up[1]) {
				t.Fatalf("offered at 10:30 %v, at 18:00 %v; want true, false", offered(up[0]), offered(up[1]))
			}
			if !slices.Contains(up[1].Tools, echo) {
				t.Fatal("unconditioned tools must stay")
			}
		})
	}
}

// Alert-driven restriction: while the alerts feed says critical, the
// side-effecting tool is withheld, the request's records say so, and a
// call of it anyway is answered policy_denied without running.
func TestPolicyAlertFeed(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := policyHarness(t, k, `!(has(feeds.alerts) && feeds.alerts.level == "critical")`)
			h.up.script = []step{{Text: "calm"}, {Calls: []tcall{call("c1", big, `{}`)}}, {Text: "refused"}}
			h.feeds = map[string]string{"alerts": `{"level":"info"}`}
			k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, false, nil)), false)
			h.feeds = map[string]string{"alerts": `{"level":"critical"}`}
			k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, false, nil)), false)
			up := h.up.requests()
			if !offered(up[0]) || offered(up[1]) {
				t.Fatalf("offered with info %v, with critical %v", offered(up[0]), offered(up[1]))
			}
			if res := up[2].Msgs[2].Results[0]; res.Env.OK || res.Env.Error.Code != toolexec.CodePolicyDenied {
				t.Fatalf("result = %+v", res)
			}
			if h.svc.count("big") != 0 {
				t.Fatal("a denied call ran")
			}
			h.waitEntries(t, 2)
			e := lastEntry(t, h)
			if len(e.PolicyFiltered) != 1 || e.PolicyFiltered[0].Tool != "svc.big" || e.PolicyFiltered[0].Rules[0] != "r1" {
				t.Fatalf("history policy_filtered = %+v", e.PolicyFiltered)
			}
			var outcome *audit.Event
			for _, ev := range h.audit.events() {
				if ev.Type == audit.TypeResponse {
					outcome = &ev
				}
			}
			if outcome == nil || len(outcome.PolicyFiltered) != 1 || outcome.PolicyFiltered[0].Tool != "svc.big" {
				t.Fatalf("response event = %+v", outcome)
			}
			if ev := toolEvents(h); len(ev) != 1 || ev[0].Status != toolexec.CodePolicyDenied {
				t.Fatalf("tool events = %+v", ev)
			}
		})
	}
}

// Session-scoped escalation: svc.big is offered once svc.echo was called
// earlier in the conversation (its hidden round restored by continuity),
// and within a turn from the round after echo's.
func TestPolicySessionEscalation(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := policyHarness(t, k, `"svc.echo" in session.called`)
			h.up.script = []step{
				{Calls: []tcall{call("c1", echo, `{"q":"a"}`)}}, {Calls: []tcall{call("c2", big, `{}`)}}, {Text: "answer1"},
				{Text: "answer2"},
			}
			ctx := context.Background()
			f := k.decodeFinal(t, h.post(ctx, k.runnerRequest([]tmsg{{Role: "user", Text: "q1"}}, []string{"shell"}, false, nil)), false)
			if f.Text != "answer1" {
				t.Fatalf("turn 1: %+v", f)
			}
			up := h.up.requests()
			if offered(up[0]) {
				t.Fatal("svc.big offered before svc.echo was called")
			}
			// Round 2 of turn 1: echo ran in round 1, so big is offered
			// to the model from round 2 on (rules are evaluated before
			// every upstream call: a real model never calls a tool it was
			// not offered) and its call runs.
			if !offered(up[1]) || !offered(up[2]) {
				t.Fatalf("svc.big not offered in the rounds after svc.echo ran: %v, %v", up[1].Tools, up[2].Tools)
			}
			if h.svc.count("big") != 1 {
				t.Fatalf("big ran %d times after echo in the same turn", h.svc.count("big"))
			}
			turn2 := []tmsg{{Role: "user", Text: "q1"}, {Role: "assistant", Text: "answer1"}, {Role: "user", Text: "q2"}}
			k.decodeFinal(t, h.post(ctx, k.runnerRequest(turn2, []string{"shell"}, false, nil)), false)
			if up := h.up.requests(); !offered(up[3]) {
				t.Fatalf("turn 2 (echo called earlier in the conversation) does not offer svc.big: %v", up[3].Tools)
			}
			// Another conversation: nothing called yet.
			h.up.script = append(h.up.script, step{Text: "fresh"})
			k.decodeFinal(t, h.post(ctx, k.runnerRequest([]tmsg{{Role: "user", Text: "other"}}, []string{"shell"}, false, nil)), false)
			if up := h.up.requests(); offered(up[4]) {
				t.Fatal("a fresh conversation inherited another's escalation")
			}
		})
	}
}
