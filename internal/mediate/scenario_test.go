package mediate

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/continuity"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/wire"
)

// Presented aliases of the test manifest's tools.
const (
	echo = "svc__echo"
	slow = "svc__slow"
	big  = "svc__big"
	add  = "calc__add"
)

var u = func(in, out int) wire.Usage { return wire.Usage{Input: in, Output: out} }

type scenario struct {
	name        string
	noStream    bool // run only without streaming
	policy      manifest.Policy
	runnerTools []string
	extra       map[string]any
	msgs        []tmsg
	script      []step
	status      int // expected status (default 200)
	// setup, when set, prepares the harness before the runner's request
	// (other tools or services).
	setup func(t *testing.T, h *harness)
	check func(t *testing.T, h *harness, r outcomeOf)
}

// outcomeOf is one scenario run's observations.
type outcomeOf struct {
	stream bool
	status int
	body   []byte // error bodies
	raw    []byte // the runner's response body (non-streaming)
	final  final
	up     []upReq
}

var hello = []tmsg{{Role: "user", Text: "hello"}}

func call(id, name, args string) tcall { return tcall{ID: id, Name: name, Args: args} }

var scenarios = []scenario{
	{
		name:   "text only: answer relayed, managed tools appended after the runner's, upstream streaming as the runner does",
		script: []step{{Text: "hi there", Usage: u(10, 2)}},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "hi there")
			if got := r.up[0].Tools; !slices.Equal(got, []string{"shell", echo, slow, big, add}) {
				t.Errorf("upstream tools = %v", got)
			}
			// A streaming runner's rounds stream upstream (OpenAI: with
			// usage); a non-streaming runner's do not.
			if r.up[0].Stream != r.stream || (k(h) == "openai" && r.up[0].StreamOpts != r.stream) {
				t.Errorf("upstream request (runner streaming: %v): %s", r.stream, r.up[0].Raw)
			}
			wantUsage(t, r, u(10, 2))
			e := lastEntry(t, h)
			if e.Status != "ok" || e.Usage.TotalRounds != 1 || len(e.ToolTrace) != 0 {
				t.Errorf("history = %+v", e)
			}
			var resp []audit.Event
			for _, ev := range h.audit.events() {
				if ev.Type == audit.TypeResponse {
					resp = append(resp, ev)
				}
			}
			if len(resp) != 1 || !resp[0].Mediated || resp[0].StatusCode != 200 || *resp[0].TokensIn != 10 || *resp[0].ToolsCount != 4 {
				t.Errorf("response audit = %+v", resp)
			}
		},
	},
	{
		name: "managed only: executed in order, results appended, asked again, usage summed",
		script: []step{
			{Calls: []tcall{call("c1", echo, `{"q":"a"}`), call("c2", add, `{"a":2,"b":3}`)}, Usage: u(10, 5)},
			{Text: "sum is 5", Usage: u(20, 3)},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "sum is 5")
			wantUsage(t, r, u(30, 8))
			if h.svc.count("echo") != 1 || h.svc.count("add") != 1 {
				t.Errorf("service hits = %v", h.svc.hits)
			}
			if got := h.svc.auth["echo"]; got != "Bearer svc-secret" {
				t.Errorf("service auth = %q, want the projected bearer", got)
			}
			m := r.up[1].Msgs
			if len(m) != 3 || len(m[1].Calls) != 2 || m[2].Role != "tool" || len(m[2].Results) != 2 {
				t.Fatalf("second upstream transcript = %+v", m)
			}
			if res := m[2].Results[0]; res.ID != "c1" || !res.Env.OK || !strings.Contains(string(res.Env.Data), `"q":"a"`) {
				t.Errorf("echo result = %+v", res)
			}
			if res := m[2].Results[1]; res.ID != "c2" || !res.Env.OK || !strings.Contains(string(res.Env.Data), "5") {
				t.Errorf("add result = %+v", res)
			}
			e := lastEntry(t, h)
			if e.Status != "ok" || e.Usage.TotalRounds != 2 || e.Usage.PromptTokens != 30 || len(e.ToolTrace) != 1 {
				t.Fatalf("history = %+v", e)
			}
			tc := e.ToolTrace[0].ToolCalls
			if len(tc) != 2 || tc[0].Name != "svc.echo" || tc[0].Service != "svc" || string(tc[0].Arguments) != `{"q":"a"}` || tc[1].Name != "calc.add" {
				t.Errorf("trace = %+v", tc)
			}
			if ru := e.ToolTrace[0].RoundUsage; ru.PromptTokens != 10 || ru.CompletionTokens != 5 {
				t.Errorf("round usage = %+v", ru)
			}
			ev := toolEvents(h)
			if len(ev) != 2 || ev[0].Tool != "svc.echo" || ev[0].Service != "svc" || ev[0].Round != 1 || ev[0].Status != "ok" || ev[0].LatencyMS == nil {
				t.Errorf("audit = %+v", ev)
			}
		},
	},
	{
		name:   "native only: handed back unchanged, nothing executed",
		script: []step{{Calls: []tcall{call("n1", "shell", `{"cmd":"ls"}`)}, Usage: u(7, 1)}},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			if !r.stream {
				if want := h.kit.upstreamResponse(h.up.script[0], 0); string(r.raw) != string(want) {
					t.Errorf("handed back\n%s\nwant byte for byte\n%s", r.raw, want)
				}
			}
			wantCalls(t, r, "shell")
			if len(r.up) != 1 || h.svc.count("echo") != 0 {
				t.Errorf("upstream calls %d", len(r.up))
			}
			if e := lastEntry(t, h); len(e.ToolTrace) != 0 || h.med.opt.Continuity.(continuity.Sizer).Len() != 0 {
				t.Errorf("native-only turn left trace/continuity: %+v", e)
			}
		},
	},
	{
		name: "managed prefix, native suffix: prefix run, suffix hidden, native re-emitted later is handed back",
		script: []step{
			{Calls: []tcall{call("c1", echo, `{"q":"a"}`), call("n1", "shell", `{"cmd":"ls"}`)}, Usage: u(1, 1)},
			{Calls: []tcall{call("n2", "shell", `{"cmd":"ls"}`)}, Usage: u(1, 1)},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantCalls(t, r, "shell")
			if r.final.Calls[0].ID != "n2" {
				t.Errorf("handed back %+v", r.final.Calls)
			}
			m := r.up[1].Msgs
			if len(m) != 3 || len(m[1].Calls) != 1 || m[1].Calls[0].Name != echo || len(m[2].Results) != 1 {
				t.Errorf("hidden suffix leaked: %+v", m)
			}
			wantUsage(t, r, u(2, 2))
		},
	},
	{
		name: "managed prefix, native suffix, then an answer: the hidden suffix is simply dropped",
		script: []step{
			{Calls: []tcall{call("c1", echo, `{"q":"a"}`), call("n1", "shell", `{}`)}},
			{Text: "no need for the shell"},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "no need for the shell")
			if got := roles(r.up[1].Msgs); got != "user(hello) assistant:c1 tool:c1" {
				t.Errorf("transcript %s", got)
			}
		},
	},
	{
		name: "rejected batch, then managed only, then an answer",
		script: []step{
			{Calls: []tcall{call("n1", "shell", `{}`), call("c1", echo, `{"q":"a"}`)}},
			{Calls: []tcall{call("c2", echo, `{"q":"a"}`)}},
			{Text: "done"},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "done")
			if h.svc.count("echo") != 1 {
				t.Errorf("echo ran %d times", h.svc.count("echo"))
			}
			tr := lastEntry(t, h).ToolTrace
			if len(tr) != 2 || !strings.Contains(string(tr[0].ToolCalls[0].Result), toolexec.CodeRejected) || !strings.Contains(string(tr[1].ToolCalls[0].Result), `"ok":true`) {
				t.Errorf("trace %+v", tr)
			}
		},
	},
	{
		name: "native first: nothing executed, every call rejected, model replans",
		script: []step{
			{Calls: []tcall{call("n1", "shell", `{}`), call("c1", echo, `{"q":"a"}`)}},
			{Text: "replanned"},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "replanned")
			if h.svc.count("echo") != 0 {
				t.Error("a call of a rejected batch was executed")
			}
			res := r.up[1].Msgs[2].Results
			if len(res) != 2 {
				t.Fatalf("results = %+v", res)
			}
			for _, x := range res {
				if x.Env.OK || x.Env.Error.Code != toolexec.CodeRejected || !strings.Contains(x.Env.Error.Message, echo) {
					t.Errorf("result = %+v", x)
				}
			}
		},
	},
	{
		name: "interleaved: rejected as a whole",
		script: []step{
			{Calls: []tcall{call("c1", echo, `{"q":"a"}`), call("n1", "shell", `{}`), call("c2", echo, `{"q":"b"}`)}},
			{Text: "ok"},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "ok")
			if h.svc.count("echo") != 0 {
				t.Error("executed")
			}
			if res := r.up[1].Msgs[2].Results; len(res) != 3 || res[2].Env.Error.Code != toolexec.CodeRejected {
				t.Errorf("results = %+v", res)
			}
		},
	},
	{
		name: "duplicates: same canonical name and arguments answered, not executed again",
		script: []step{
			{Calls: []tcall{call("c1", echo, `{"q":"a"}`), call("c2", echo, `{ "q" : "a" }`)}},
			{Calls: []tcall{call("c3", "svc.echo", `{"q":"a"}`)}},
			{Text: "done"},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "done")
			if h.svc.count("echo") != 1 {
				t.Errorf("echo ran %d times", h.svc.count("echo"))
			}
			if res := r.up[1].Msgs[2].Results[1]; res.Env.Error == nil || res.Env.Error.Code != toolexec.CodeDuplicate {
				t.Errorf("second call = %+v", res)
			}
			tr := lastEntry(t, h).ToolTrace
			if len(tr) != 2 || tr[0].ToolCalls[1].DuplicateOfRound != 1 || tr[0].ToolCalls[1].DuplicateCount != 1 ||
				tr[1].ToolCalls[0].DuplicateOfRound != 1 || tr[1].ToolCalls[0].DuplicateCount != 2 {
				t.Errorf("trace = %+v", tr)
			}
		},
	},
	{
		name:   "unknown tool: fails closed with a structured result",
		script: []step{{Calls: []tcall{call("c1", "svc__nope", `{}`)}}, {Text: "sorry"}},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "sorry")
			res := r.up[1].Msgs[2].Results[0]
			if res.Env.OK || res.Env.Error.Code != toolexec.CodeUnknownTool {
				t.Errorf("result = %+v", res)
			}
			if ev := toolEvents(h); len(ev) != 1 || ev[0].Status != toolexec.CodeUnknownTool {
				t.Errorf("audit = %+v", ev)
			}
		},
	},
	{
		name:   "invalid arguments: rejected before the service, -32602",
		script: []step{{Calls: []tcall{call("c1", echo, `{"x":1}`), call("c2", echo, `not json`)}}, {Text: "fixed"}},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			if h.svc.count("echo") != 0 {
				t.Error("service called with invalid arguments")
			}
			for _, res := range r.up[1].Msgs[2].Results {
				if res.Env.OK || res.Env.Error.Code != toolexec.CodeInvalidArguments || res.Env.Error.RPCCode != toolexec.RPCInvalidParams {
					t.Errorf("result = %+v", res)
				}
			}
			if e := lastEntry(t, h); e.Status != "ok" || e.ToolTrace[0].ToolCalls[0].Result == nil {
				t.Errorf("failed executions must be traced: %+v", e)
			}
		},
	},
	{
		name:   "per-tool timeout: structured timeout result, -32014",
		script: []step{{Calls: []tcall{call("c1", slow, `{}`)}}, {Text: "it timed out"}},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "it timed out")
			res := r.up[1].Msgs[2].Results[0]
			if res.Env.OK || res.Env.Error.Code != toolexec.CodeTimeout || res.Env.Error.RPCCode != toolexec.RPCTimeout {
				t.Errorf("result = %+v", res)
			}
			if ev := toolEvents(h); len(ev) != 1 || ev[0].Status != toolexec.CodeTimeout {
				t.Errorf("audit = %+v", ev)
			}
		},
	},
	{
		name:   "truncation: explicit truncated flag and the true size",
		policy: manifest.Policy{MaxToolResultBytes: 1000},
		script: []step{{Calls: []tcall{call("c1", big, `{}`)}}, {Text: "big"}},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			env := r.up[1].Msgs[2].Results[0].Env
			if !env.OK || !env.Truncated || env.OriginalBytes < 40000 || len(env.Data) > 1100 {
				t.Errorf("envelope = truncated %v original %d data %d bytes", env.Truncated, env.OriginalBytes, len(env.Data))
			}
		},
	},
	{
		name:   "call caps: calls past max_tool_calls_per_round, then past max_tool_calls_per_turn, answered too_many_tool_calls without running",
		policy: manifest.Policy{MaxToolCallsPerRound: 2, MaxToolCallsPerTurn: 3},
		script: []step{
			{Calls: []tcall{call("c1", echo, `{"q":"1"}`), call("c2", echo, `{"q":"2"}`), call("c3", echo, `{"q":"3"}`), call("c4", add, `{"a":1,"b":2}`)}},
			{Calls: []tcall{call("c5", echo, `{"q":"5"}`), call("c6", echo, `{"q":"6"}`)}},
			{Text: "done"},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "done")
			if h.svc.count("echo") != 3 || h.svc.count("add") != 0 {
				t.Errorf("service hits = %v, want echo 3 (q 1, 2, 5) and add 0", h.svc.hits)
			}
			codes := func(res []tresult) (out []string) {
				for _, x := range res {
					if x.Env.OK {
						out = append(out, "ok")
					} else {
						out = append(out, x.Env.Error.Code)
					}
				}
				return out
			}
			tm := toolexec.CodeTooManyCalls
			if got := codes(r.up[1].Msgs[2].Results); !slices.Equal(got, []string{"ok", "ok", tm, tm}) {
				t.Errorf("round 1 results = %v", got)
			}
			if msg := r.up[1].Msgs[2].Results[2].Env.Error.Message; !strings.Contains(msg, "max_tool_calls_per_round") {
				t.Errorf("round cap message = %q", msg)
			}
			res2 := r.up[2].Msgs[4].Results
			if got := codes(res2); !slices.Equal(got, []string{"ok", tm}) || !strings.Contains(res2[1].Env.Error.Message, "max_tool_calls_per_turn") {
				t.Errorf("round 2 results = %v %+v", got, res2)
			}
			tr := lastEntry(t, h).ToolTrace
			if len(tr) != 2 || len(tr[0].ToolCalls) != 4 || tr[0].ToolCalls[3].Name != "calc.add" || !strings.Contains(string(tr[0].ToolCalls[3].Result), tm) ||
				len(tr[1].ToolCalls) != 2 || !strings.Contains(string(tr[1].ToolCalls[1].Result), tm) {
				t.Errorf("trace = %+v", tr)
			}
			var refused []string
			for _, ev := range toolEvents(h) {
				if ev.Status == tm {
					refused = append(refused, ev.Tool)
				}
			}
			if !slices.Equal(refused, []string{"svc.echo", "calc.add", "svc.echo"}) {
				t.Errorf("refused calls in the audit = %v", refused)
			}
		},
	},
	{
		name:   "call caps by default: one response with 200 distinct calls runs 32 of them",
		script: []step{{Calls: manyCalls(200)}, {Text: "done"}},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "done")
			if n := h.svc.count("echo"); n != manifest.DefaultMaxToolCallsPerRound {
				t.Errorf("echo ran %d times, want %d", n, manifest.DefaultMaxToolCallsPerRound)
			}
			res := r.up[1].Msgs[2].Results
			if len(res) != 200 || res[31].Env.Error != nil || res[32].Env.Error == nil || res[32].Env.Error.Code != toolexec.CodeTooManyCalls || res[199].Env.Error.Code != toolexec.CodeTooManyCalls {
				t.Errorf("%d results", len(res))
			}
		},
	},
	{
		name:   "max_rounds exhausted: 502 with a clear body, history error",
		policy: manifest.Policy{MaxRounds: 2},
		script: []step{
			{Calls: []tcall{call("c1", echo, `{"q":"1"}`)}},
			{Calls: []tcall{call("c2", echo, `{"q":"2"}`)}},
			{Calls: []tcall{call("c3", echo, `{"q":"3"}`)}},
		},
		status: http.StatusBadGateway,
		check: func(t *testing.T, h *harness, r outcomeOf) {
			if !strings.Contains(string(r.body), "tool_budget_exhausted") || !strings.Contains(string(r.body), "max_rounds (2)") {
				t.Errorf("body = %s", r.body)
			}
			if len(r.up) != 3 || h.svc.count("echo") != 2 {
				t.Errorf("upstream calls %d, echo %d", len(r.up), h.svc.count("echo"))
			}
			if e := lastEntry(t, h); e.Status != "error" || e.StatusCode != 502 || len(e.ToolTrace) != 2 {
				t.Errorf("history = %+v", e)
			}
			if ev := h.audit.events(); ev[len(ev)-1].Type != audit.TypeError || ev[len(ev)-1].StatusCode != 502 {
				t.Errorf("last audit event = %+v", ev[len(ev)-1])
			}
		},
	},
	{
		name:   "total_timeout exhausted: 502, upstream call canceled",
		policy: manifest.Policy{TotalTimeoutMS: 300, TimeoutPerToolMS: 100},
		script: []step{{Hold: true}},
		status: http.StatusBadGateway,
		check: func(t *testing.T, h *harness, r outcomeOf) {
			if !strings.Contains(string(r.body), "total_timeout_ms (300)") {
				t.Errorf("body = %s", r.body)
			}
		},
	},
	{
		name:   "upstream refuses the first call: status and body relayed",
		script: []step{{Status: 400, Raw: `{"error":{"message":"bad request"}}`}},
		status: 400,
		check: func(t *testing.T, h *harness, r outcomeOf) {
			if string(r.body) != `{"error":{"message":"bad request"}}` || len(r.up) != 1 {
				t.Errorf("body = %s after %d calls", r.body, len(r.up))
			}
		},
	},
	{
		name: "busy provider: the round is retried, honouring Retry-After, and answered",
		script: []step{{Calls: []tcall{call("c1", echo, `{"q":"a"}`)}},
			{Status: 429, Raw: `{"error":{"type":"rate_limit_error","message":"slow down"}}`, RetryAfter: "0"},
			{Status: 529, Raw: `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`},
			{Text: "done"}},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			if r.final.Text != "done" || len(r.up) != 4 {
				t.Errorf("answer %q after %d calls", r.final.Text, len(r.up))
			}
			retries := 0
			for _, e := range h.audit.events() {
				if e.Type == audit.TypeError && strings.Contains(e.Error, "retrying") {
					retries++
				}
			}
			if retries != 2 {
				t.Errorf("%d retry events, want 2", retries)
			}
		},
	},
	{
		name: "busy provider: given up after the retries, the provider's status and error relayed",
		script: []step{{Calls: []tcall{call("c1", echo, `{"q":"a"}`)}},
			{Status: 429, Raw: `{"error":{"type":"rate_limit_error","message":"slow down"}}`},
			{Status: 429, Raw: `{"error":{"type":"rate_limit_error","message":"slow down"}}`},
			{Status: 429, Raw: `{"error":{"type":"rate_limit_error","message":"slow down"}}`},
			{Status: 429, Raw: `{"error":{"type":"rate_limit_error","message":"slow down"}}`}},
		status: 429,
		check: func(t *testing.T, h *harness, r outcomeOf) {
			if !strings.Contains(string(r.body), "slow down") || len(r.up) != 5 {
				t.Errorf("body = %s after %d calls", r.body, len(r.up))
			}
		},
	},
	{
		// Streaming, the text written before the call has reached the
		// runner by then: TestLiveProviderErrorAfterTextIsInBand.
		name:     "upstream fails mid-turn: 502, never partial text",
		noStream: true,
		script:   []step{{Text: "partial", Calls: []tcall{call("c1", echo, `{"q":"a"}`)}}, {Status: 500, Raw: `oops`}},
		status:   http.StatusBadGateway,
		check: func(t *testing.T, h *harness, r outcomeOf) {
			if strings.Contains(string(r.body), "partial") || !strings.Contains(string(r.body), "tool_mediation_error") {
				t.Errorf("body = %s", r.body)
			}
		},
	},
	{
		name:   "malformed upstream response: 502",
		script: []step{{Raw: `{"nonsense":true}`}},
		status: http.StatusBadGateway,
	},
	{
		name:   "tool_choice naming a managed tool by canonical name is rewritten, then relaxed after the round",
		extra:  map[string]any{},
		script: []step{{Calls: []tcall{call("c1", echo, `{"q":"a"}`)}}, {Text: "ok"}},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			if r.up[0].ToolChoice != echo || r.up[1].ToolChoice != "auto" {
				t.Errorf("tool_choice = %q then %q", r.up[0].ToolChoice, r.up[1].ToolChoice)
			}
		},
	},
}

func TestScenarios(t *testing.T) {
	for _, k := range kits {
		for _, sc := range scenarios {
			for _, stream := range []bool{false, true} {
				if stream && sc.noStream {
					continue
				}
				name := string(k.format()) + "/" + sc.name
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) { runScenario(t, k, sc, stream) })
			}
		}
	}
}

func runScenario(t *testing.T, k kit, sc scenario, stream bool) {
	h := newHarness(t, k, harnessOptions{policy: sc.policy})
	h.up.script = sc.script
	if sc.setup != nil {
		sc.setup(t, h)
	}
	tools := sc.runnerTools
	if tools == nil {
		tools = []string{"shell"}
	}
	msgs := sc.msgs
	if msgs == nil {
		msgs = hello
	}
	extra := sc.extra
	if strings.HasPrefix(sc.name, "tool_choice") {
		extra = toolChoiceNaming(k, "svc.echo")
	}
	res := h.post(context.Background(), k.runnerRequest(msgs, tools, stream, extra))
	want := sc.status
	if want == 0 {
		want = http.StatusOK
	}
	r := outcomeOf{stream: stream, status: res.StatusCode}
	if res.StatusCode != want {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d, want %d: %s", res.StatusCode, want, b)
	}
	if want == http.StatusOK {
		if stream && !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("content type %q", res.Header.Get("Content-Type"))
		}
		if !stream {
			r.raw, _ = io.ReadAll(res.Body)
			res.Body = io.NopCloser(bytes.NewReader(r.raw))
		}
		r.final = k.decodeFinal(t, res, stream)
	} else {
		r.body, _ = io.ReadAll(res.Body)
	}
	r.up = h.up.requests()
	// The Mediator records after the runner has its answer.
	h.waitEntries(t, 1)
	if sc.check != nil {
		sc.check(t, h, r)
	}
}

// manyCalls is n distinct echo calls.
func manyCalls(n int) []tcall {
	out := make([]tcall, n)
	for i := range out {
		out[i] = call(fmt.Sprintf("c%d", i), echo, fmt.Sprintf(`{"q":"%d"}`, i))
	}
	return out
}

// k is the harness's format.
func k(h *harness) string { return string(h.kit.format()) }

func toolChoiceNaming(k kit, name string) map[string]any { return k.namedChoice(name) }

func wantText(t *testing.T, r outcomeOf, text string) {
	t.Helper()
	if r.final.Text != text || len(r.final.Calls) != 0 {
		t.Errorf("runner got text %q calls %v, want %q", r.final.Text, r.final.Calls, text)
	}
}

func wantCalls(t *testing.T, r outcomeOf, names ...string) {
	t.Helper()
	var got []string
	for _, c := range r.final.Calls {
		got = append(got, c.Name)
	}
	if !slices.Equal(got, names) {
		t.Errorf("runner got calls %v, want %v", got, names)
	}
}

func wantUsage(t *testing.T, r outcomeOf, want wire.Usage) {
	t.Helper()
	if r.final.Usage != want {
		t.Errorf("usage = %+v, want %+v", r.final.Usage, want)
	}
}

func lastEntry(t *testing.T, h *harness) history.Entry {
	t.Helper()
	all := h.hist.all()
	if len(all) == 0 {
		t.Fatal("no history entry")
	}
	return all[len(all)-1]
}

func toolEvents(h *harness) []audit.Event {
	var out []audit.Event
	for _, e := range h.audit.events() {
		if e.Type == "tool_call" {
			out = append(out, e)
		}
	}
	return out
}

// A busy provider after keepalives have started: the runner's stream is
// under way, so the failure is an in-band error event carrying the
// provider's error type, which the official SDKs raise (issue 12 "Errors
// that SDKs can act on").
func TestBusyProviderAfterKeepalivesIsTypedInBand(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{keepalive: time.Millisecond})
			busy := step{Status: 429, Raw: `{"error":{"type":"rate_limit_error","message":"slow down"}}`}
			h.up.script = []step{{Calls: []tcall{call("c1", slow, `{"q":"a"}`)}}, busy, busy, busy, busy}
			res := h.post(context.Background(), k.runnerRequest(hello, nil, true, nil))
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s (keepalives had started, so the stream was under way)", res.StatusCode, body)
			}
			if !strings.Contains(string(body), ": cllama: running managed tools") {
				t.Fatalf("no keepalive before the error: %s", body)
			}
			if !strings.Contains(string(body), `"rate_limit_error"`) || !strings.Contains(string(body), "429") {
				t.Fatalf("in-band error lacks the provider's type and status: %s", body)
			}
			if k.format() == "openai" && !strings.Contains(string(body), `"code":"rate_limit_exceeded"`) {
				t.Fatalf("OpenAI in-band error lacks code rate_limit_exceeded: %s", body)
			}
		})
	}
}
