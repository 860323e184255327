package toolcall

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/resultstore"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/tracing"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

type runnerFunc func(context.Context, toolexec.Call) toolexec.Envelope

func (f runnerFunc) Run(ctx context.Context, c toolexec.Call) toolexec.Envelope { return f(ctx, c) }

func testCall() Call {
	p := manifest.DefaultPolicy()
	p.TimeoutPerToolMS = 50
	p.MaxToolResultBytes = 8
	return Call{
		Agent:     &agentctx.Agent{ID: "alice", ServiceAuth: map[string]*manifest.ServiceAuth{"svc": {Service: "svc", AuthType: "bearer", Token: "projected"}}},
		Tool:      &manifest.Tool{Name: "svc.t", Execution: manifest.Execution{Service: "svc", Auth: &manifest.Auth{Type: "bearer", Token: "compiled"}}},
		Arguments: json.RawMessage(`{}`),
		Policy:    p,
	}
}

func TestRunGivesTheRunnerTheAgentsBoundsAndCredential(t *testing.T) {
	var got toolexec.Call
	out := Run(context.Background(), runnerFunc(func(_ context.Context, c toolexec.Call) toolexec.Envelope {
		got = c
		return toolexec.Envelope{OK: true, Data: json.RawMessage(`"0123456789"`)}
	}), testCall(), time.Now, nil)
	if got.AgentID != "alice" || got.Timeout != 50*time.Millisecond || got.MaxResultBytes != 8 || got.Auth == nil || got.Auth.Token != "projected" {
		t.Fatalf("runner got %+v", got)
	}
	// The Runner returned more than the cap: Check cuts it and says so.
	if !out.Envelope.OK || !out.Envelope.Truncated || out.Envelope.OriginalBytes != 12 {
		t.Fatalf("envelope = %+v", out.Envelope)
	}
	c := testCall()
	c.Tool.Execution.TimeoutMS = 7
	Run(context.Background(), runnerFunc(func(_ context.Context, cc toolexec.Call) toolexec.Envelope {
		got = cc
		return toolexec.Envelope{OK: true}
	}), c, time.Now, nil)
	if got.Timeout != 7*time.Millisecond {
		t.Fatalf("the tool's own timeout_ms must win: %v", got.Timeout)
	}
}

func TestRunIsBoundedWhenTheRunnerIgnoresItsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the grace period")
	}
	release := make(chan struct{})
	defer close(release)
	out := Run(context.Background(), runnerFunc(func(context.Context, toolexec.Call) toolexec.Envelope {
		<-release
		return toolexec.Envelope{OK: true}
	}), testCall(), time.Now, nil)
	if out.Envelope.OK || out.Envelope.Error.Code != toolexec.CodeTimeout || out.Envelope.Error.RPCCode != toolexec.RPCTimeout {
		t.Fatalf("envelope = %+v", out.Envelope)
	}
}

func TestRunCanceledByTheCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() { <-started; cancel() }()
	out := Run(ctx, runnerFunc(func(ctx context.Context, _ toolexec.Call) toolexec.Envelope {
		close(started)
		<-ctx.Done()
		return toolexec.Fail(toolexec.CodeCanceled, "canceled", 0)
	}), testCall(), time.Now, nil)
	if out.Envelope.Error == nil || out.Envelope.Error.Code != toolexec.CodeCanceled {
		t.Fatalf("envelope = %+v", out.Envelope)
	}
}

func TestRunSurvivesARunnerPanic(t *testing.T) {
	var heard any
	out := Run(context.Background(), runnerFunc(func(context.Context, toolexec.Call) toolexec.Envelope { panic("boom") }), testCall(), time.Now, func(p any) { heard = p })
	if out.Envelope.OK || out.Envelope.Error.Code != toolexec.CodeToolError || heard != "boom" {
		t.Fatalf("envelope = %+v, heard %v", out.Envelope, heard)
	}
	if strings.Contains(out.Envelope.Error.Message, "boom") {
		t.Fatal("a panic's text must not reach the caller")
	}
}

func TestCheckRepairsABrokenEnvelope(t *testing.T) {
	env := Check(toolexec.Envelope{OK: false}, 100)
	if env.Error == nil || env.Error.Code != toolexec.CodeToolError {
		t.Fatalf("failure without error: %+v", env)
	}
	env = Check(toolexec.Envelope{OK: true, Data: json.RawMessage(`not json`)}, 100)
	if string(env.Data) != `"not json"` {
		t.Fatalf("invalid JSON data must be quoted: %s", env.Data)
	}
	env = Check(toolexec.Envelope{OK: true, Data: json.RawMessage(`"ééééé"`)}, 4)
	if !env.Truncated || !json.Valid(env.Data) || strings.ContainsRune(string(env.Data), '\uFFFD') {
		t.Fatalf("a cut must stay valid UTF-8 and JSON: %+v", env)
	}
}

func TestExecutedShowsTheClawIDThatWasUsed(t *testing.T) {
	for in, want := range map[string]string{
		`{"symbol":"NVDA"}`:                       `{"symbol":"NVDA"}`,
		`{"claw_id":"bob","x":1}`:                 `{"claw_id":"alice","x":1}`,
		`{"ClawId":"bob","x":1}`:                  `{"x":1}`,
		`{"claw\u005fid":"bob"}`:                  `{"claw_id":"alice"}`,
		`{"clawID":"bob","claw_id":"carol"}`:      `{"claw_id":"alice"}`,
		`{"note":"claws","nested":{"claw_id":1}}`: `{"note":"claws","nested":{"claw_id":1}}`,
	} {
		if got := string(Executed(json.RawMessage(in), "alice", nil)); got != want {
			t.Errorf("Executed(%s) = %s, want %s", in, got, want)
		}
	}
	// A schema that declares claw_id: the service gets it even when the
	// model left it out, and the trace shows it (before, the trace
	// omitted the id the service received).
	declares := &manifest.Tool{InputSchema: json.RawMessage(`{"type":"object","properties":{"claw_id":{"type":"string"},"x":{}}}`)}
	if got := string(Executed(json.RawMessage(`{"x":1}`), "alice", declares)); got != `{"claw_id":"alice","x":1}` {
		t.Errorf("declared claw_id: %s", got)
	}
}

// Check cuts an over-cap result by the executor's rule: the whole
// envelope within the cap, its size said (before, the data was cut to
// the cap and quoted, so the envelope exceeded it).
func TestCheckKeepsTheEnvelopeWithinTheCap(t *testing.T) {
	data, _ := json.Marshal(strings.Repeat("x", 5000))
	env := Check(toolexec.Envelope{OK: true, Data: data}, 1000)
	enc := Encode(env)
	if !env.Truncated || env.OriginalBytes != len(data) || len(enc) > 1000 {
		t.Fatalf("envelope of %d bytes (cap 1000), truncated %v, original %d", len(enc), env.Truncated, env.OriginalBytes)
	}
	big, _ := json.Marshal(strings.Repeat("x", 3*manifest.DefaultMaxToolResultBytes))
	if env := Check(toolexec.Envelope{OK: true, Data: big}, 0); !env.Truncated || len(Encode(env)) > manifest.DefaultMaxToolResultBytes {
		t.Fatalf("limit 0 must be the default cap: %d bytes", len(Encode(env)))
	}
}

// BenchmarkTracingCost is one governed call (with a Runner that answers
// at once) with tracing off and on, in one run.
func BenchmarkTracingCost(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "tracing=off", true: "tracing=on"}[on], func(b *testing.B) {
			if on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				tracing.Install(tp)
				defer func() { tracing.Uninstall(); _ = tp.Shutdown(context.Background()) }()
			}
			r := runnerFunc(func(context.Context, toolexec.Call) toolexec.Envelope {
				return toolexec.Envelope{OK: true, Data: json.RawMessage(`{"v":1}`)}
			})
			c := testCall()
			c.Policy.MaxToolResultBytes = 1000
			ctx, span := tracing.Start(context.Background(), "request", 0)
			defer span.End()
			b.ReportAllocs()
			for b.Loop() {
				Run(ctx, r, c, time.Now, nil)
			}
		})
	}
}

// boundedRunner says every call returns by its deadline.
type boundedRunner struct{ runnerFunc }

func (boundedRunner) Bounded(toolexec.Call) bool { return true }

// goid is the running goroutine's id, from its stack header.
func goid() string {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	id, _, _ := strings.Cut(s, " ")
	return id
}

func TestABoundedCallRunsOnTheCallersGoroutine(t *testing.T) {
	caller := goid()
	var ran string
	out := Run(context.Background(), boundedRunner{func(context.Context, toolexec.Call) toolexec.Envelope {
		ran = goid()
		return toolexec.Envelope{OK: true}
	}}, testCall(), time.Now, nil)
	if !out.Envelope.OK || ran != caller {
		t.Fatalf("envelope %+v; ran on goroutine %s, caller %s", out.Envelope, ran, caller)
	}
	// An unbounded Runner is guarded by a goroutine of its own.
	Run(context.Background(), runnerFunc(func(context.Context, toolexec.Call) toolexec.Envelope {
		ran = goid()
		return toolexec.Envelope{OK: true}
	}), testCall(), time.Now, nil)
	if ran == caller {
		t.Fatal("an unbounded Runner ran on the caller's goroutine")
	}
	var heard any
	out = Run(context.Background(), boundedRunner{func(context.Context, toolexec.Call) toolexec.Envelope { panic("boom") }}, testCall(), time.Now, func(p any) { heard = p })
	if out.Envelope.OK || out.Envelope.Error.Code != toolexec.CodeToolError || heard != "boom" {
		t.Fatalf("a bounded Runner's panic: envelope = %+v, heard %v", out.Envelope, heard)
	}
}

// The executor's HTTP calls run unguarded: a service that never answers
// still ends at the tool's timeout, through the call's own context.
func TestAnHTTPCallToAHangingServiceEndsAtItsTimeout(t *testing.T) {
	hang := make(chan struct{})
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer svc.Close()
	defer close(hang)
	ex := toolexec.New(toolexec.Options{})
	defer ex.Close()
	c := testCall()
	c.Tool.Execution = manifest.Execution{Transport: manifest.TransportHTTP, Service: "svc", BaseURL: svc.URL, Method: "POST", Path: "/x"}
	if !ex.Bounded(toolexec.Call{Tool: c.Tool}) {
		t.Fatal("an HTTP call must be bounded")
	}
	if ex.Bounded(toolexec.Call{Tool: &manifest.Tool{Execution: manifest.Execution{Transport: manifest.TransportMCP}}}) {
		t.Fatal("an MCP call is guarded")
	}
	start := time.Now()
	out := Run(context.Background(), ex, c, time.Now, nil)
	if out.Envelope.OK || out.Envelope.Error.Code != toolexec.CodeTimeout {
		t.Fatalf("envelope = %+v", out.Envelope)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the call took %v against a 50 ms timeout", took)
	}
}

// A result over its cap is kept whole: the envelope holds the head within
// the cap, truncated, original_bytes and the handle; a result over the
// store's absolute bound (cut by the executor) is kept up to it, and its
// envelope says so.
func TestRunKeepsAResultOverTheCap(t *testing.T) {
	store, err := resultstore.OpenLocal(resultstore.LocalOptions{Limits: resultstore.Limits{MaxResultBytes: 1000, MaxAgentBytes: 10000, MaxBytes: 10000}})
	if err != nil {
		t.Fatal(err)
	}
	c := testCall()
	c.Policy.MaxToolResultBytes = 256
	c.Results = &Results{Store: store, Scope: resultstore.Scope{Agent: "alice", Conversation: "mcp:s"}}
	text := strings.Repeat("abcdefghij", 99)
	var asked int
	run := func(env toolexec.Envelope) Outcome {
		return Run(context.Background(), runnerFunc(func(_ context.Context, cc toolexec.Call) toolexec.Envelope {
			asked = cc.MaxResultBytes
			return env
		}), c, time.Now, nil)
	}
	out := run(toolexec.Envelope{OK: true, Data: json.RawMessage(`"` + text + `"`)})
	env := out.Envelope
	if asked != 1000 {
		t.Fatalf("the runner was bounded by %d, want the store's bound 1000", asked)
	}
	if n := len(Encode(env)); n > 256 || !env.Truncated || env.OriginalBytes != len(text) || env.ResultHandle == "" || out.Kept == nil {
		t.Fatalf("envelope (%d bytes): %+v", n, env)
	}
	head, _ := strconv.Unquote(string(env.Data))
	if !strings.HasPrefix(text, head) || len(Encode(env)) < 246 {
		t.Fatalf("head %q", head)
	}
	// Cut by the executor at the bound: kept in part, and said so.
	out = run(toolexec.Envelope{OK: true, Data: json.RawMessage(`"` + text[:990] + `"`), Truncated: true, OriginalBytes: 7_000_000})
	if env := out.Envelope; env.OriginalBytes != 7_000_000 || !strings.Contains(env.Note, "first 990 bytes") || len(Encode(env)) > 256 {
		t.Fatalf("over the absolute bound: %+v", env)
	}
	// claw.read_result reads it back; another scope cannot.
	c.Tool, c.Arguments = ReadResult, json.RawMessage(`{"handle":"`+out.Envelope.ResultHandle+`","offset":10,"length":20}`)
	read := Run(context.Background(), nil, c, time.Now, nil)
	if !read.Envelope.OK || !strings.Contains(string(read.Envelope.Data), `"text":"`+text[10:30]+`"`) || read.Kept == nil || !read.Kept.Read {
		t.Fatalf("read: %+v", read)
	}
	c.Results.Scope.Agent = "bob"
	if read := Run(context.Background(), nil, c, time.Now, nil); read.Envelope.OK || read.Envelope.Error.Code != CodeUnknownHandle {
		t.Fatalf("bob's read: %+v", read.Envelope)
	}
}
