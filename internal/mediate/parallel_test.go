package mediate

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// The gate service observes concurrency instead of timing it: every call
// records when it starts and ends with how many calls were in flight, and
// a call can wait at a meeting point until a number of calls of its group
// have arrived. A correct loop lets the calls of a parallel batch meet; a
// loop that ran them one after another would leave them waiting (they
// give up after gateWait, and the test fails on the record, not the time).

// Presented aliases of the gate's tools: par is parallel-safe, serial not.
const (
	gatePar    = "gate__par"
	gateSerial = "gate__serial"
)

const gateWait = 5 * time.Second

type gateEvent struct {
	kind     string // "start", "end", "canceled", "gave-up"
	q        string
	inflight int // calls in flight after the event
}

type gateService struct {
	srv      *httptest.Server
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	inflight int
	max      int
	arrived  map[string]int
	ran      map[string]int
	events   []gateEvent
}

// gateArgs are a gate call's arguments: q names the call; a call of a
// group waits until meet calls of the group have arrived; hold waits
// until the call is canceled; linger keeps a call in flight a moment
// (which only makes a wrongly overlapping call more visible).
type gateArgs struct {
	Q        string `json:"q"`
	Group    string `json:"group"`
	Meet     int    `json:"meet"`
	Hold     bool   `json:"hold"`
	LingerMS int    `json:"linger_ms"`
}

func newGate(t *testing.T) *gateService {
	g := &gateService{changed: make(chan struct{}), arrived: map[string]int{}, ran: map[string]int{}}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

// note records an event under the lock and wakes the waiters.
func (g *gateService) note(kind, q string, f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f != nil {
		f()
	}
	g.events = append(g.events, gateEvent{kind, q, g.inflight})
	close(g.changed)
	g.changed = make(chan struct{})
}

// waitFor waits until cond holds, ctx ends or gateWait passes.
func (g *gateService) waitFor(ctx context.Context, cond func() bool) bool {
	deadline := time.After(gateWait)
	for {
		g.mu.Lock()
		ok, ch := cond(), g.changed
		g.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-deadline:
			return false
		}
	}
}

func (g *gateService) serve(w http.ResponseWriter, r *http.Request) {
	var in gateArgs
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil { // the whole body: a closed connection is noticed
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	g.note("start", in.Q, func() {
		g.inflight++
		g.max = max(g.max, g.inflight)
		g.ran[in.Q]++
		if in.Group != "" {
			g.arrived[in.Group]++
		}
	})
	switch {
	case in.Hold:
		<-ctx.Done()
		g.note("canceled", in.Q, nil)
	case in.Meet > 0:
		if !g.waitFor(ctx, func() bool { return g.arrived[in.Group] >= in.Meet }) {
			g.note("gave-up", in.Q, nil)
		}
	}
	if in.LingerMS > 0 {
		select {
		case <-time.After(time.Duration(in.LingerMS) * time.Millisecond):
		case <-ctx.Done():
		}
	}
	g.note("end", in.Q, func() { g.inflight-- })
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"q":%q}`, in.Q)
}

func (g *gateService) snapshot() (events []gateEvent, maxInflight int, ran map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.events), g.max, maps.Clone(g.ran)
}

// useGate gives the harness's agent the gate's two tools instead of its
// own, under the same policy.
func useGate(t *testing.T, h *harness) {
	h.gate = newGate(t)
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	exec := manifest.Execution{Transport: "http", Service: "gate", BaseURL: h.gate.srv.URL, Method: "POST", Path: "/call"}
	yes := true
	h.agent.Tools = &manifest.Tools{Version: 1, Policy: h.agent.Tools.Policy, Tools: []manifest.Tool{
		{Name: "gate.par", Description: "a parallel-safe call", InputSchema: schema, Annotations: &manifest.Annotations{ReadOnlyHint: &yes, ParallelSafe: &yes}, Execution: exec},
		{Name: "gate.serial", Description: "a call that runs alone", InputSchema: schema, Execution: exec},
	}}
}

// gateCall is a call of tool with the given arguments.
func gateCall(id, tool string, a gateArgs) tcall { return call(id, tool, string(mustJSON(a))) }

// eventAt is the position of the first event of kind for q (-1: none).
func eventAt(events []gateEvent, kind, q string) int {
	return slices.IndexFunc(events, func(e gateEvent) bool { return e.kind == kind && e.q == q })
}

func noGiveUps(t *testing.T, events []gateEvent) {
	t.Helper()
	for _, e := range events {
		if e.kind == "gave-up" {
			t.Errorf("call %s waited for calls that never came alongside it: %+v", e.q, events)
		}
	}
}

// wantResultsInOrder checks that the results follow the model's calls,
// each carrying its own call's answer.
func wantResultsInOrder(t *testing.T, res []tresult, qs ...string) {
	t.Helper()
	if len(res) != len(qs) {
		t.Fatalf("%d results, want %d: %+v", len(res), len(qs), res)
	}
	for i, q := range qs {
		if id := fmt.Sprintf("c%d", i+1); res[i].ID != id || !res[i].Env.OK || !strings.Contains(string(res[i].Env.Data), `"q":"`+q+`"`) {
			t.Errorf("result %d = %+v, want call %s answering %s", i, res[i], id, q)
		}
	}
}

func startMS(t *testing.T, tc history.ToolCall) int64 {
	t.Helper()
	if tc.StartMS == nil {
		t.Fatalf("call %s has no start_ms", tc.Arguments)
	}
	return *tc.StartMS
}

var parallelScenarios = []scenario{
	{
		name:  "parallel-safe calls overlap, a call that is not parallel-safe runs alone between them, results in the model's order",
		setup: useGate,
		script: []step{
			{Calls: []tcall{
				gateCall("c1", gatePar, gateArgs{Q: "a1", Group: "A", Meet: 2}),
				gateCall("c2", gatePar, gateArgs{Q: "a2", Group: "A", Meet: 2}),
				gateCall("c3", gateSerial, gateArgs{Q: "s", LingerMS: 20}),
				gateCall("c4", gatePar, gateArgs{Q: "b1", Group: "B", Meet: 2}),
				gateCall("c5", gatePar, gateArgs{Q: "b2", Group: "B", Meet: 2}),
			}},
			{Text: "done"},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "done")
			events, maxInflight, _ := h.gate.snapshot()
			noGiveUps(t, events)
			if maxInflight != 2 {
				t.Errorf("at most %d calls were in flight, want 2 (each pair overlapping): %+v", maxInflight, events)
			}
			// The barrier: s starts alone after a1 and a2 ended, and ends
			// before b1 and b2 start.
			s, sEnd := eventAt(events, "start", "s"), eventAt(events, "end", "s")
			if s < 0 || events[s].inflight != 1 || sEnd != s+1 {
				t.Errorf("s did not run alone: %+v", events)
			}
			for _, q := range []string{"a1", "a2"} {
				if e := eventAt(events, "end", q); e < 0 || e > s {
					t.Errorf("%s had not ended when s started: %+v", q, events)
				}
			}
			for _, q := range []string{"b1", "b2"} {
				if b := eventAt(events, "start", q); b < sEnd {
					t.Errorf("%s started before s ended: %+v", q, events)
				}
			}
			wantResultsInOrder(t, r.up[1].Msgs[2].Results, "a1", "a2", "s", "b1", "b2")
			tr := lastEntry(t, h).ToolTrace
			if len(tr) != 1 || len(tr[0].ToolCalls) != 5 {
				t.Fatalf("trace = %+v", tr)
			}
			tc := tr[0].ToolCalls
			for i, q := range []string{"a1", "a2", "s", "b1", "b2"} {
				if !strings.Contains(string(tc[i].Arguments), `"q":"`+q+`"`) {
					t.Errorf("trace call %d = %s, want %s", i, tc[i].Arguments, q)
				}
			}
			// Offsets are whole milliseconds, cut down: a call that
			// started after another ended has start_ms >= the other's
			// start_ms + latency_ms; overlapping calls start within each
			// other's span (one millisecond of rounding either way).
			end := func(i int) int64 { return startMS(t, tc[i]) + tc[i].LatencyMS }
			for _, pair := range [][2]int{{0, 1}, {3, 4}} {
				a, b := pair[0], pair[1]
				if startMS(t, tc[b]) > end(a)+1 || startMS(t, tc[a]) > end(b)+1 {
					t.Errorf("calls %d and %d overlapped but their offsets do not: %+v", a, b, tc)
				}
			}
			if startMS(t, tc[2]) < max(end(0), end(1)) || startMS(t, tc[3]) < end(2) || startMS(t, tc[4]) < end(2) {
				t.Errorf("offsets cross the barrier: %+v", tc)
			}
			var tools []string
			for _, ev := range toolEvents(h) {
				tools = append(tools, ev.Tool)
			}
			if !slices.Equal(tools, []string{"gate.par", "gate.par", "gate.serial", "gate.par", "gate.par"}) {
				t.Errorf("audit tool_call events = %v, want the model's order", tools)
			}
		},
	},
	{
		name:   "max_parallel_calls bounds the calls in flight",
		policy: manifest.Policy{MaxParallelCalls: 3},
		setup:  useGate,
		script: []step{
			{Calls: []tcall{
				gateCall("c1", gatePar, gateArgs{Q: "1", Group: "G1", Meet: 3}),
				gateCall("c2", gatePar, gateArgs{Q: "2", Group: "G1", Meet: 3}),
				gateCall("c3", gatePar, gateArgs{Q: "3", Group: "G1", Meet: 3}),
				gateCall("c4", gatePar, gateArgs{Q: "4", Group: "G2", Meet: 3}),
				gateCall("c5", gatePar, gateArgs{Q: "5", Group: "G2", Meet: 3}),
				gateCall("c6", gatePar, gateArgs{Q: "6", Group: "G2", Meet: 3}),
			}},
			{Text: "done"},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "done")
			events, maxInflight, _ := h.gate.snapshot()
			noGiveUps(t, events)
			if maxInflight != 3 {
				t.Errorf("at most %d calls were in flight, want max_parallel_calls 3: %+v", maxInflight, events)
			}
			for _, q := range []string{"4", "5", "6"} {
				for _, first := range []string{"1", "2", "3"} {
					if eventAt(events, "start", q) < eventAt(events, "start", first) {
						t.Errorf("call %s started before call %s: %+v", q, first, events)
					}
				}
			}
			wantResultsInOrder(t, r.up[1].Msgs[2].Results, "1", "2", "3", "4", "5", "6")
		},
	},
	{
		name:   "max_parallel_calls 1: parallel-safe calls run one at a time",
		policy: manifest.Policy{MaxParallelCalls: 1},
		setup:  useGate,
		script: []step{
			{Calls: []tcall{
				gateCall("c1", gatePar, gateArgs{Q: "1", LingerMS: 10}),
				gateCall("c2", gatePar, gateArgs{Q: "2", LingerMS: 10}),
				gateCall("c3", gatePar, gateArgs{Q: "3", LingerMS: 10}),
			}},
			{Text: "done"},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "done")
			events, maxInflight, _ := h.gate.snapshot()
			if maxInflight != 1 {
				t.Errorf("%d calls were in flight at once, want 1: %+v", maxInflight, events)
			}
			wantResultsInOrder(t, r.up[1].Msgs[2].Results, "1", "2", "3")
		},
	},
	{
		name:  "a duplicate inside a parallel batch runs once, the later call answered duplicate_tool_call",
		setup: useGate,
		script: []step{
			{Calls: []tcall{
				gateCall("c1", gatePar, gateArgs{Q: "x"}),
				gateCall("c2", gatePar, gateArgs{Q: "y"}),
				gateCall("c3", gatePar, gateArgs{Q: "x"}),
			}},
			{Text: "done"},
		},
		check: func(t *testing.T, h *harness, r outcomeOf) {
			wantText(t, r, "done")
			if _, _, ran := h.gate.snapshot(); ran["x"] != 1 || ran["y"] != 1 {
				t.Errorf("calls run = %v, want x and y once", ran)
			}
			res := r.up[1].Msgs[2].Results
			if len(res) != 3 || !res[0].Env.OK || res[0].ID != "c1" || !res[1].Env.OK ||
				res[2].ID != "c3" || res[2].Env.Error == nil || res[2].Env.Error.Code != toolexec.CodeDuplicate {
				t.Fatalf("results = %+v", res)
			}
			tc := lastEntry(t, h).ToolTrace[0].ToolCalls
			if tc[0].DuplicateOfRound != 0 || tc[2].DuplicateOfRound != 1 || tc[2].DuplicateCount != 1 || tc[2].LatencyMS != 0 {
				t.Errorf("trace = %+v", tc)
			}
		},
	},
}

func TestParallelScenarios(t *testing.T) {
	for _, k := range kits {
		for _, sc := range parallelScenarios {
			t.Run(string(k.format())+"/"+sc.name, func(t *testing.T) { runScenario(t, k, sc, false) })
		}
	}
}

// A runner that goes away while a parallel batch runs cancels every call
// in flight; nothing after the batch starts.
func TestClientDisconnectCancelsParallelBatch(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{keepalive: 10 * time.Millisecond})
			useGate(t, h)
			h.up.script = []step{{Calls: []tcall{
				gateCall("c1", gatePar, gateArgs{Q: "h1", Hold: true}),
				gateCall("c2", gatePar, gateArgs{Q: "h2", Hold: true}),
				gateCall("c3", gateSerial, gateArgs{Q: "after"}),
			}}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := h.post(ctx, k.runnerRequest(hello, nil, true, nil))
			buf := make([]byte, 16)
			if _, err := res.Body.Read(buf); err != nil { // the first keepalive
				t.Fatal(err)
			}
			if !h.gate.waitFor(context.Background(), func() bool { return h.gate.inflight == 2 }) {
				t.Fatal("the two parallel-safe calls were never in flight together")
			}
			cancel()
			h.waitEntries(t, 1)
			canceled := func() bool {
				n := 0
				for _, e := range h.gate.events {
					if e.kind == "canceled" {
						n++
					}
				}
				return n == 2
			}
			if !h.gate.waitFor(context.Background(), canceled) {
				events, _, _ := h.gate.snapshot()
				t.Fatalf("the service did not see both calls canceled: %+v", events)
			}
			if _, _, ran := h.gate.snapshot(); ran["after"] != 0 {
				t.Error("the call after the batch ran")
			}
			e := h.hist.all()[0]
			if e.Status != "error" || e.StatusCode != 499 || len(e.ToolTrace) != 1 || len(e.ToolTrace[0].ToolCalls) != 2 {
				t.Fatalf("history %+v", e)
			}
			for _, tc := range e.ToolTrace[0].ToolCalls {
				if !strings.Contains(string(tc.Result), toolexec.CodeCanceled) {
					t.Errorf("trace call %s: %s", tc.Arguments, tc.Result)
				}
			}
		})
	}
}

// batches groups consecutive parallel-safe runs; a run that is not
// parallel-safe stands alone; calls answered without running ("-") stay
// in the batch open at their place.
func TestBatches(t *testing.T) {
	yes := true
	par := &manifest.Tool{Name: "s.p", Annotations: &manifest.Annotations{ParallelSafe: &yes}}
	ser := &manifest.Tool{Name: "s.s"}
	for in, want := range map[string]string{
		"":       "",
		"p":      "p",
		"pppp":   "pppp",
		"s":      "s",
		"ss":     "s|s",
		"ppspp":  "pp|s|pp",
		"-p-s-p": "-p-|s-|p",
		"sp-p":   "s|p-p",
		"---":    "---",
		"--s--":  "--s--",
		"p-s":    "p-|s",
	} {
		calls := make([]pending, len(in))
		for i, c := range in {
			switch c {
			case 'p':
				calls[i] = pending{tool: par, run: true}
			case 's':
				calls[i] = pending{tool: ser, run: true}
			case '-':
				calls[i] = pending{tool: par}
			}
		}
		var got []string
		for _, b := range batches(calls) {
			var s strings.Builder
			for _, p := range b {
				switch {
				case !p.run:
					s.WriteByte('-')
				case p.parallel():
					s.WriteByte('p')
				default:
					s.WriteByte('s')
				}
			}
			got = append(got, s.String())
		}
		if g := strings.Join(got, "|"); g != want {
			t.Errorf("batches(%q) = %q, want %q", in, g, want)
		}
	}
}
