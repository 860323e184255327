package mediate

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/testproc"

	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// A held call in every format, streaming or not: the runner's request
// stays open (a stream gets keepalives) until a person decides, the call
// runs only when approved and with exactly the approved arguments, and
// the model reads why otherwise.

// heldTurn is one runner request whose call of svc.echo is held.
type heldTurn struct {
	h    *harness
	m    *approvals.Manager
	res  chan *http.Response
	stop context.CancelFunc
}

// holdEcho starts a turn whose model calls svc.echo with args (held when
// q is "big"), then answers "done".
func holdEcho(t *testing.T, k kit, stream bool, p manifest.Policy, store approvals.Store, calls ...tcall) *heldTurn {
	var h *harness
	// cllama's one recorder gets the approvals' events too.
	emit := func(e audit.Event) { audit.New(h.audit).Emit(e) }
	m := approvals.New(approvals.Options{Store: store, Poll: 20 * time.Millisecond, Emit: emit})
	h = newHarness(t, k, harnessOptions{policy: p, approvals: m, keepalive: 10 * time.Millisecond})
	h.agent.Tools.Tools[0].Approve = []manifest.Approval{{When: `args.q == "big" || args.q == "huge"`, Source: "claw-pod.yml: x-claw.tools[0].approve"}}
	if len(calls) == 0 {
		calls = []tcall{call("c1", echo, `{"q":"big"}`)}
	}
	h.up.script = []step{{Calls: calls, Usage: u(10, 5)}, {Text: "done", Usage: u(20, 3)}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ht := &heldTurn{h: h, m: m, res: make(chan *http.Response, 1), stop: cancel}
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.front.URL+k.path(), strings.NewReader(string(k.runnerRequest(hello, []string{"shell"}, stream, nil))))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			ht.res <- nil
			return
		}
		ht.res <- res
	}()
	return ht
}

// pendingOf waits until s lists n pending requests.
func pendingOf(t *testing.T, s approvals.Store, n int) []*approvals.Request {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		rs, err := s.Pending(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == n {
			return rs
		}
	}
	t.Fatalf("never %d pending requests", n)
	return nil
}

func decide(t *testing.T, m *approvals.Manager, r *approvals.Request, d approvals.Decision) {
	t.Helper()
	if d.ArgumentsSHA256 == "" {
		d.ArgumentsSHA256 = r.ArgumentsSHA256
	}
	if _, err := m.Decide(context.Background(), r.ID, d); err != nil {
		t.Fatal(err)
	}
}

// finish reads the runner's answer and the turn's records.
func (ht *heldTurn) finish(t *testing.T, k kit, stream bool) (final, []upReq) {
	t.Helper()
	res := <-ht.res
	if res == nil || res.StatusCode != 200 {
		t.Fatalf("response %+v", res)
	}
	defer res.Body.Close()
	f := k.decodeFinal(t, res, stream)
	ht.h.waitEntries(t, 1)
	return f, ht.h.up.requests()
}

// resultOf is the envelope of the first tool result the model read in
// its second call.
func resultOf(t *testing.T, up []upReq, i int) toolexec.Envelope {
	t.Helper()
	if len(up) < 2 {
		t.Fatalf("%d upstream calls", len(up))
	}
	for _, m := range up[1].Msgs {
		if m.Role == "tool" && len(m.Results) > i {
			return m.Results[i].Env
		}
	}
	t.Fatalf("no tool result in %+v", up[1].Msgs)
	return toolexec.Envelope{}
}

func eachFormat(t *testing.T, f func(t *testing.T, k kit, stream bool)) {
	for _, k := range kits {
		for _, stream := range []bool{false, true} {
			name := string(k.format())
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) { f(t, k, stream) })
		}
	}
}

func TestApprovedCallRunsWithTheApprovedArguments(t *testing.T) {
	eachFormat(t, func(t *testing.T, k kit, stream bool) {
		// A total budget far shorter than the wait: a person's decision
		// does not count against it.
		ht := holdEcho(t, k, stream, manifest.Policy{TotalTimeoutMS: 300}, nil)
		r := pendingOf(t, ht.m.Store(), 1)[0]
		if r.Tool != "svc.echo" || r.Agent != "analyst-0" || r.Service != "svc" || string(r.Arguments) != `{"q":"big"}` || r.ToolsSHA256 == "" || !strings.Contains(r.Rule, "args.q") {
			t.Fatalf("request %+v", r)
		}
		if ht.h.svc.count("echo") != 0 {
			t.Fatal("the held call ran before a decision")
		}
		if stream {
			// The stream is open and kept alive while the call waits.
			res := <-ht.res
			line, err := bufio.NewReader(res.Body).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, ":") {
				t.Fatalf("first stream line %q %v", line, err)
			}
			ht.res <- &http.Response{StatusCode: res.StatusCode, Body: res.Body, Header: res.Header}
		}
		time.Sleep(400 * time.Millisecond) // past total_timeout_ms
		decide(t, ht.m, r, approvals.Decision{State: approvals.Approved, By: "ops-alice"})
		f, up := ht.finish(t, k, stream)
		if f.Text != "done" || ht.h.svc.count("echo") != 1 {
			t.Fatalf("final %+v, echo ran %d times", f, ht.h.svc.count("echo"))
		}
		if env := resultOf(t, up, 0); !env.OK || !strings.Contains(string(env.Data), `"q":"big"`) {
			t.Fatalf("result %+v", env)
		}
		tc := lastEntry(t, ht.h).ToolTrace[0].ToolCalls[0]
		if tc.Approval == nil || tc.Approval.ID != r.ID || tc.Approval.Decision != approvals.Approved || tc.Approval.By != "ops-alice" {
			t.Fatalf("trace %+v", tc)
		}
		var req, dec, call int
		for _, e := range ht.h.audit.events() {
			switch {
			case e.Type == audit.TypeApprovalRequested && e.Approval.ID == r.ID:
				req++
			case e.Type == audit.TypeApprovalDecided && e.Approval.Decision == approvals.Approved && e.Approval.By == "ops-alice":
				dec++
			case e.Type == audit.TypeToolCall && e.Approval != nil && e.Approval.ID == r.ID && e.Status == "ok":
				call++
			}
		}
		if req != 1 || dec != 1 || call != 1 {
			t.Fatalf("audit: requested %d decided %d tool_call %d", req, dec, call)
		}
	})
}

func TestDeniedAndTimedOutCallsDoNotRun(t *testing.T) {
	eachFormat(t, func(t *testing.T, k kit, stream bool) {
		ht := holdEcho(t, k, stream, manifest.Policy{}, nil)
		r := pendingOf(t, ht.m.Store(), 1)[0]
		decide(t, ht.m, r, approvals.Decision{State: approvals.Denied, By: "ops", Reason: "too large for today"})
		_, up := ht.finish(t, k, stream)
		env := resultOf(t, up, 0)
		if env.OK || env.Error.Code != approvals.CodeDenied || !strings.Contains(env.Error.Message, "too large for today") || ht.h.svc.count("echo") != 0 {
			t.Fatalf("denied: %+v, echo ran %d", env, ht.h.svc.count("echo"))
		}
		if tc := lastEntry(t, ht.h).ToolTrace[0].ToolCalls[0]; tc.Approval == nil || tc.Approval.Decision != approvals.Denied {
			t.Fatalf("trace %+v", tc)
		}

		ht = holdEcho(t, k, stream, manifest.Policy{ApprovalTimeoutMS: 50}, nil)
		_, up = ht.finish(t, k, stream)
		if env := resultOf(t, up, 0); env.OK || env.Error.Code != approvals.CodeTimeout || ht.h.svc.count("echo") != 0 {
			t.Fatalf("timeout: %+v", env)
		}
	})
}

// Two calls of one tool in one response are two requests: approving one
// runs that one, with its arguments, and not the other.
func TestADecisionIsBoundToItsCallsArguments(t *testing.T) {
	eachFormat(t, func(t *testing.T, k kit, stream bool) {
		ht := holdEcho(t, k, stream, manifest.Policy{}, nil, call("c1", echo, `{"q":"big"}`), call("c2", echo, `{"q":"huge"}`), call("c3", echo, `{"q":"small"}`))
		r := pendingOf(t, ht.m.Store(), 1)[0] // calls run one at a time
		if string(r.Arguments) != `{"q":"big"}` {
			t.Fatalf("first request %s", r.Arguments)
		}
		// A decision naming other arguments is refused and decides nothing.
		if _, err := ht.m.Decide(context.Background(), r.ID, approvals.Decision{State: approvals.Approved, By: "x", ArgumentsSHA256: approvals.Digest([]byte(`{"q":"huge"}`))}); err != approvals.ErrMismatch {
			t.Fatalf("mismatched decision: %v", err)
		}
		decide(t, ht.m, r, approvals.Decision{State: approvals.Approved, By: "ops"})
		var r2 *approvals.Request
		for deadline := time.Now().Add(10 * time.Second); r2 == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if rs, _ := ht.m.Store().Pending(context.Background()); len(rs) == 1 && rs[0].ID != r.ID {
				r2 = rs[0]
			}
		}
		if r2 == nil || string(r2.Arguments) != `{"q":"huge"}` {
			t.Fatalf("second request %+v", r2)
		}
		decide(t, ht.m, r2, approvals.Decision{State: approvals.Denied, By: "ops", Reason: "no"})
		_, up := ht.finish(t, k, stream)
		if e0, e1, e2 := resultOf(t, up, 0), resultOf(t, up, 1), resultOf(t, up, 2); !e0.OK || e1.OK || e1.Error.Code != approvals.CodeDenied || !e2.OK {
			t.Fatalf("results %+v %+v %+v", e0, e1, e2)
		}
		if n := ht.h.svc.count("echo"); n != 2 {
			t.Fatalf("echo ran %d times, want 2 (big, small)", n)
		}
	})
}

func TestARunnerThatGoesAwayCancelsTheRequest(t *testing.T) {
	eachFormat(t, func(t *testing.T, k kit, stream bool) {
		ht := holdEcho(t, k, stream, manifest.Policy{}, nil)
		r := pendingOf(t, ht.m.Store(), 1)[0]
		ht.stop()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if got, _ := ht.m.Store().Get(context.Background(), r.ID); got.State == approvals.Cancelled {
				break
			}
		}
		if got, _ := ht.m.Store().Get(context.Background(), r.ID); got.State != approvals.Cancelled {
			t.Fatalf("state %s", got.State)
		}
		if _, err := ht.m.Decide(context.Background(), r.ID, approvals.Decision{State: approvals.Approved, By: "late"}); err != approvals.ErrDecided {
			t.Fatalf("approving a cancelled request: %v", err)
		}
		if ht.h.svc.count("echo") != 0 {
			t.Fatal("a cancelled call ran")
		}
	})
}

// With replicas, a decision made through another cllama releases the
// call held here.
func TestADecisionOnAnotherReplicaReleasesTheCall(t *testing.T) {
	url := approvalsRedis(t)
	client := func() *redis.Client {
		o, _ := redis.ParseURL(url)
		c := redis.NewClient(o)
		t.Cleanup(func() { c.Close() })
		return c
	}
	eachFormat(t, func(t *testing.T, k kit, stream bool) {
		here, err := approvals.NewRedis(context.Background(), client(), "desk", "here", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { here.Close() })
		there, err := approvals.NewRedis(context.Background(), client(), "desk", "there", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { there.Close() })
		other := approvals.New(approvals.Options{Store: there})
		ht := holdEcho(t, k, stream, manifest.Policy{}, here)
		r := pendingOf(t, there, 1)[0]
		decide(t, other, r, approvals.Decision{State: approvals.Approved, By: "ops-on-there"})
		if f, _ := ht.finish(t, k, stream); f.Text != "done" || ht.h.svc.count("echo") != 1 {
			t.Fatalf("final %+v", f)
		}
	})
}

// approvalsRedis starts a redis-server of the test's own, or skips.
func approvalsRedis(t *testing.T) string {
	return testproc.Redis(t)
}

// A cllama restart: the requests the stopped process left pending end
// lost when it starts again, and an approval of one no longer runs
// anything (the call waited in the memory of the process that is gone).
func TestARestartLosesThePendingCalls(t *testing.T) {
	eachFormat(t, func(t *testing.T, k kit, stream bool) {
		dir := t.TempDir()
		store, _, err := approvals.OpenLocal(dir, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ht := holdEcho(t, k, stream, manifest.Policy{}, store)
		r := pendingOf(t, store, 1)[0]
		// The new process opens the same state directory.
		again, lost, err := approvals.OpenLocal(dir, time.Now())
		if err != nil || len(lost) != 1 || lost[0].ID != r.ID || lost[0].State != approvals.Lost {
			t.Fatalf("lost %v %v", lost, err)
		}
		m := approvals.New(approvals.Options{Store: again})
		if got, err := m.Decide(context.Background(), r.ID, approvals.Decision{State: approvals.Approved, By: "ops"}); err != approvals.ErrDecided || got.State != approvals.Lost {
			t.Fatalf("approving after the restart: %+v %v", got, err)
		}
		ht.stop() // the old process's request is gone with it
		if ht.h.svc.count("echo") != 0 {
			t.Fatal("a call held before the restart ran")
		}
	})
}
