package auditlog

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
)

func TestParseLinePrefixes(t *testing.T) {
	ev := `{"ts":"2026-01-02T03:04:05Z","claw_id":"a","type":"tool_call","tool":"svc.t","error":"a | b"}`
	for _, c := range []struct {
		line      string
		ok, isErr bool
	}{
		{ev, true, false},
		{"cllama-1  | " + ev, true, false},
		{"pod_cllama_1  | " + ev, true, false},
		{"  " + ev + "\r", true, false},
		{"cllama-1  | cllama: listening on :8080", false, false},
		{"cllama-1  |", false, false},
		{"", false, false},
		{`{"ts":"2026-01-02T03:04:05Z"}`, false, true},
		{`{"type":"request"}`, false, true},
		{`cllama-1  | {"ts":`, false, true},
		{`{"ts":"yesterday","type":"request"}`, false, true},
	} {
		e, ok, err := ParseLine([]byte(c.line))
		if ok != c.ok || (err != nil) != c.isErr {
			t.Errorf("%q: ok %v err %v", c.line, ok, err)
		}
		if ok && (e.Tool != "svc.t" || e.Error != "a | b") {
			t.Errorf("%q: %+v", c.line, e)
		}
	}
}

func TestEventsCountsAndSkips(t *testing.T) {
	good := `c-1 | {"ts":"2026-01-02T03:04:05Z","type":"request","claw_id":"a"}`
	long := `{"ts":"2026-01-02T03:04:05Z","type":"request","error":"` + strings.Repeat("x", MaxLineBytes) + `"}`
	in := strings.Join([]string{good, "diagnostic", "", "{broken", long, good, `{"ts":"2026-01-02T03:04:05Z","type":"response"}`}, "\n")
	es, st, err := ReadAll(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || st != (ReadStats{Lines: 6, Events: 3, Malformed: 2, Other: 1}) {
		t.Fatalf("%d events, %+v", len(es), st)
	}
}

func ts(s int) time.Time { return time.Date(2026, 1, 2, 3, 4, s, 0, time.UTC) }

// A round calling the same tool twice pairs the n-th log event with the
// n-th trace call; a call only in history is added; the log's time wins.
func TestMergeKeysAndOccurrences(t *testing.T) {
	call := func(s int, req string, round int, tool, status string) audit.Event {
		return audit.Event{TS: ts(s), ClawID: "a", Type: audit.TypeToolCall, RequestID: req, Round: round, Tool: tool, Status: status}
	}
	events := []audit.Event{
		{TS: ts(1), ClawID: "a", Type: audit.TypeRequest, RequestID: "r1"},
		call(2, "r1", 1, "svc.t", "ok"),
		call(3, "r1", 1, "svc.t", "duplicate_tool_call"),
		{TS: ts(4), ClawID: "a", Type: audit.TypeResponse, RequestID: "r1", TokensIn: audit.Ptr(10), TokensOut: audit.Ptr(2)},
	}
	entry := history.Entry{ID: "r1", AgentID: "a", Timestamp: ts(1), Model: "p/m", Usage: history.Usage{PromptTokens: 10, CompletionTokens: 2},
		ToolTrace: []history.Round{
			{Round: 1, RoundUsage: history.Usage{PromptTokens: 7, CompletionTokens: 1}, ToolCalls: []history.ToolCall{
				{Name: "svc.t", Arguments: json.RawMessage(`{"n":1}`), Result: json.RawMessage(`{"ok":true,"data":1}`), Service: "svc"},
				{Name: "svc.t", Arguments: json.RawMessage(`{"n":1}`), Result: json.RawMessage(`{"ok":false,"error":{"code":"duplicate_tool_call"}}`), Service: "svc", DuplicateOfRound: 1},
			}},
			{Round: 2, ToolCalls: []history.ToolCall{
				{Name: "svc.u", Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`{"ok":false,"error":{"code":"timeout"}}`), Service: "svc", LatencyMS: 30000},
			}},
		}}
	rs := Merge(events, []history.Entry{entry})
	// Ordered by time: the history-only call carries the exchange's start.
	var calls []Record
	for _, r := range rs {
		if r.Type == audit.TypeToolCall {
			calls = append(calls, r)
		}
	}
	calls = append(calls[1:], calls[0])
	if len(rs) != 5 || len(calls) != 3 {
		t.Fatalf("%d records, %d calls", len(rs), len(calls))
	}
	if c := calls[0]; c.Source != SourceBoth || c.Status != "ok" || string(c.Result) != `{"ok":true,"data":1}` || *c.RoundTokensIn != 7 || c.Service != "svc" {
		t.Errorf("first: %+v", c)
	}
	if c := calls[1]; c.Source != SourceBoth || c.DuplicateOfRound != 1 || c.TS != ts(3) {
		t.Errorf("second: %+v", c)
	}
	if c := calls[2]; c.Source != SourceHistory || c.Status != "timeout" || c.Tool != "svc.u" || !c.IsToolError() {
		t.Errorf("history only: %+v", c)
	}
	s := Summarize(rs)
	if tot := s.Total; tot.Requests != 1 || tot.Responses != 1 || tot.ToolCalls != 3 || tot.ToolErrors != 2 || tot.TokensIn != 10 {
		t.Errorf("summary %+v", tot)
	}
}

func TestFilterAndSummaryWithoutAgent(t *testing.T) {
	rs := []Record{
		{Event: audit.Event{TS: ts(1), Type: audit.TypeManifestError, Error: "bad tools.json"}},
		{Event: audit.Event{TS: ts(2), ClawID: "b", Type: audit.TypeRequest, Model: "p/m"}},
		{Event: audit.Event{TS: ts(3), ClawID: "a", Type: audit.TypeError, StatusCode: 502, TokensIn: audit.Ptr(3)}},
	}
	s := Summarize(rs)
	if len(s.Agents) != 3 || s.Agents[0].Agent != NoAgent || s.Agents[0].Errors != 1 || s.Total.Errors != 2 || s.Total.TokensIn != 3 {
		t.Fatalf("%+v", s)
	}
	f := Filter{Since: ts(2), Agents: []string{"a"}}
	if got := f.Apply(rs); len(got) != 1 || got[0].ClawID != "a" {
		t.Fatalf("%+v", got)
	}
	if (Filter{Types: []string{"nope"}}).Validate() == nil {
		t.Fatal("unknown type accepted")
	}
}

func FuzzEvents(f *testing.F) {
	f.Add("cllama-1  | {\"ts\":\"2026-01-02T03:04:05Z\",\"type\":\"request\"}\nnoise\n{")
	f.Add("{\"ts\":\"2026-01-02T03:04:05Z\",\"type\":\"tool_call\",\"round\":1}")
	f.Fuzz(func(t *testing.T, in string) {
		var st ReadStats
		n := 0
		for e, err := range Events(strings.NewReader(in), &st) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Type == "" || e.TS.IsZero() {
				t.Fatalf("bad event %+v", e)
			}
			n++
		}
		if n != st.Events || st.Events+st.Malformed+st.Other > st.Lines {
			t.Fatalf("stats %+v, %d events", st, n)
		}
	})
}

// A call cllama executed with other arguments than the model's (claw_id
// forced to the caller) shows both, marked, in the records and the text.
func TestModelArgumentsShownBesideExecuted(t *testing.T) {
	events := []audit.Event{{TS: ts(2), ClawID: "beta", Type: audit.TypeToolCall, RequestID: "r1", Round: 1, Tool: "svc.t", Status: "ok"}}
	entry := history.Entry{ID: "r1", AgentID: "beta", Timestamp: ts(1), ToolTrace: []history.Round{{Round: 1, ToolCalls: []history.ToolCall{
		{Name: "svc.t", Service: "svc", Arguments: json.RawMessage(`{"claw_id":"beta"}`), ModelArguments: json.RawMessage(`{"claw_id":"alpha"}`), Result: json.RawMessage(`{"ok":true}`)},
	}}}}
	rs := Merge(events, []history.Entry{entry})
	var call *Record
	for i := range rs {
		if rs[i].Type == audit.TypeToolCall {
			call = &rs[i]
		}
	}
	if call == nil || string(call.Arguments) != `{"claw_id":"beta"}` || string(call.ModelArguments) != `{"claw_id":"alpha"}` {
		t.Fatalf("records %+v", rs)
	}
	var out strings.Builder
	if err := NewReport("p", Sources{}, Filter{}, rs).WriteText(&out, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `arguments: {"claw_id":"beta"}`) || !strings.Contains(out.String(), `model sent: {"claw_id":"alpha"} (cllama executed the arguments above)`) {
		t.Fatalf("text report:\n%s", out.String())
	}
}

// A call's start within its round comes from the trace, beside its
// latency, so the text shows which calls of a round overlapped.
func TestCallStartWithinRound(t *testing.T) {
	events := []audit.Event{{TS: ts(2), ClawID: "a", Type: audit.TypeToolCall, RequestID: "r1", Round: 1, Tool: "svc.t", Status: "ok", LatencyMS: audit.Ptr(int64(200))}}
	entry := history.Entry{ID: "r1", AgentID: "a", Timestamp: ts(1), ToolTrace: []history.Round{{Round: 1, ToolCalls: []history.ToolCall{
		{Name: "svc.t", Service: "svc", Arguments: json.RawMessage(`{"q":1}`), Result: json.RawMessage(`{"ok":true}`), StartMS: audit.Ptr(int64(0)), LatencyMS: 200},
		{Name: "svc.t", Service: "svc", Arguments: json.RawMessage(`{"q":2}`), Result: json.RawMessage(`{"ok":true}`), StartMS: audit.Ptr(int64(1)), LatencyMS: 199},
		{Name: "svc.t", Service: "svc", Arguments: json.RawMessage(`{"q":3}`), Result: json.RawMessage(`{"ok":true}`), LatencyMS: 5},
	}}}}
	rs := Merge(events, []history.Entry{entry})
	var starts []string
	for _, r := range rs {
		if r.Type != audit.TypeToolCall {
			continue
		}
		if r.StartMS == nil {
			starts = append(starts, "-")
		} else {
			starts = append(starts, strconv.FormatInt(*r.StartMS, 10))
		}
	}
	if strings.Join(starts, " ") != "1 - 0" { // ordered by time: the logged call last
		t.Fatalf("start_ms of the records: %v", starts)
	}
	var out strings.Builder
	if err := NewReport("p", Sources{}, Filter{}, rs).WriteText(&out, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"round 1 (started +0ms, 200ms)", "round 1 (started +1ms, 199ms)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), "started +") != 2 {
		t.Errorf("a call without start_ms shows one:\n%s", out.String())
	}
}

// The text report of feed fetches (claw audit --type feed_fetch) shows
// their figures per agent and feed, as the JSON report's events do.
func TestFeedFetchesInText(t *testing.T) {
	feed := func(s int, agent, name string, bytes int, cached, stale bool, status string) Record {
		return Record{Event: audit.Event{TS: ts(s), ClawID: agent, Type: audit.TypeFeedFetch, Feed: name, Bytes: audit.Ptr(bytes), Cached: cached, Stale: stale, Status: status, LatencyMS: audit.Ptr(int64(s * 10))}}
	}
	rs := []Record{feed(1, "a", "news", 10, false, false, "ok"), feed(2, "a", "news", 10, true, false, "ok"), feed(3, "a", "news", 0, false, true, "error"), feed(4, "b", "desk", 5, false, false, "ok")}
	var out strings.Builder
	if err := NewReport("p", Sources{}, Filter{}, rs).WriteText(&out, TextOptions{SummaryOnly: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"AGENT  FEED  FETCHES  FAILED  CACHED  STALE  BYTES  LATENCY MAX", "a      news  3        1       1       1      20     30ms", "b      desk  1        0       0       0      5      40ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
}

// Native calls (an MCP client on cllama's /mcp) and mediated calls of the
// same tool are one table, each row with its mode; a native call's history
// entry pairs with its log event and stands for no model exchange.
func TestNativeAndMediatedCallsInOneTable(t *testing.T) {
	events := []audit.Event{
		{TS: ts(1), ClawID: "a", Type: audit.TypeRequest, RequestID: "r1", Format: "openai", Model: "m"},
		{TS: ts(2), ClawID: "a", Type: audit.TypeToolCall, RequestID: "r1", Round: 1, Tool: "svc.t", Status: "ok", Mode: "mediated"},
		{TS: ts(3), ClawID: "a", Type: audit.TypeResponse, RequestID: "r1", Format: "openai", Model: "m"},
		{TS: ts(4), ClawID: "a", Type: audit.TypeToolCall, RequestID: "m1", Format: "mcp", Tool: "svc.t", Status: "ok", Mode: "native", LatencyMS: audit.Ptr(int64(7))},
		// A cllama older than modes logged no mode: mediated.
		{TS: ts(5), ClawID: "b", Type: audit.TypeToolCall, RequestID: "r2", Round: 1, Tool: "svc.t", Status: "timeout"},
	}
	native := history.Entry{ID: "m1", AgentID: "a", Timestamp: ts(4), Format: history.FormatMCP, Status: "ok", StatusCode: 200,
		ToolTrace: []history.Round{{ToolCalls: []history.ToolCall{{Name: "svc.t", Service: "svc", Mode: "native", Arguments: json.RawMessage(`{"x":1}`), Result: json.RawMessage(`{"ok":true}`), LatencyMS: 7}}}}}
	rs := Merge(events, []history.Entry{native})
	sum := Summarize(rs)
	if sum.Total.Requests != 1 || sum.Total.ToolCalls != 3 {
		t.Fatalf("a native call is no model request: %+v", sum.Total)
	}
	var out strings.Builder
	if err := NewReport("p", Sources{}, Filter{}, rs).WriteText(&out, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"AGENT  TOOL   MODE      EFFECT  CALLS  ERRORS",
		"a      svc.t  mediated  -       1      0",
		"a      svc.t  native    -       1      0",
		"b      svc.t  mediated  -       1      1",
		"a  svc.t  native  ok  7ms",
		`arguments: {"x":1}`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "request m1, round tokens") {
		t.Errorf("a native call shows model round tokens:\n%s", out.String())
	}
}

// A request that withheld tools by policy says so in the text report.
func TestPolicyWithheldInText(t *testing.T) {
	rs := []Record{{Event: audit.Event{TS: ts(1), ClawID: "executor", Type: audit.TypeResponse, RequestID: "r1",
		PolicyFiltered: []audit.Filtered{{Tool: "trading-api.execute_trade", Rules: []string{"r1"}}}}}}
	var out strings.Builder
	if err := NewReport("p", Sources{}, Filter{}, rs).WriteText(&out, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "tools withheld by tool policy (1 requests):") || !strings.Contains(out.String(), "executor  trading-api.execute_trade  rules r1") {
		t.Fatalf("text report:\n%s", out.String())
	}
}

// A file_repaired event (cllama cut a partial last line off a file it
// opened) reads back with its file, offset and bytes, is listed in the
// text report, and counts as no agent's activity.
func TestFileRepairedInReport(t *testing.T) {
	log := `c-1 | {"ts":"2026-01-02T03:04:05Z","claw_id":"a","type":"file_repaired","bytes":321,"file":"/claw/history/a/history.jsonl","offset":0}
c-1 | {"ts":"2026-01-02T03:04:06Z","type":"file_repaired","bytes":12,"file":"/claw/state/stored-responses.jsonl","offset":4096}
c-1 | {"ts":"2026-01-02T03:04:07Z","claw_id":"a","type":"request","request_id":"r1"}`
	events, st, err := ReadAll(strings.NewReader(log))
	if err != nil || st.Events != 3 {
		t.Fatalf("%+v %v", st, err)
	}
	if e := events[1]; e.File != "/claw/state/stored-responses.jsonl" || e.Offset == nil || *e.Offset != 4096 || e.Bytes == nil || *e.Bytes != 12 {
		t.Fatalf("event read back as %+v", e)
	}
	f := Filter{Types: []string{audit.TypeFileRepaired}}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	rs := Merge(events, nil)
	if kept := f.Apply(rs); len(kept) != 2 {
		t.Fatalf("--type file_repaired kept %d records", len(kept))
	}
	sum := Summarize(rs)
	if len(sum.Agents) != 1 || sum.Agents[0].Agent != "a" || sum.Total.Requests != 1 {
		t.Fatalf("summary %+v", sum)
	}
	var out strings.Builder
	if err := NewReport("p", Sources{}, Filter{}, rs).WriteText(&out, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"files repaired: a partial last line, never acknowledged, cut off (2):",
		"2026-01-02T03:04:05.000Z  a  /claw/history/a/history.jsonl  321 bytes cut at offset 0",
		"2026-01-02T03:04:06.000Z  (none)  /claw/state/stored-responses.jsonl  12 bytes cut at offset 4096",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
}

// Each turn is listed with what it cost: dollars from its response event
// (or its history entry when the log lacks it), "unpriced" for a model
// with no price, "-" for a turn refused before any model call; --json
// carries cost_usd per turn. Values the agents wrote are escaped.
func TestTurnsWithTheirCost(t *testing.T) {
	events := []audit.Event{
		{TS: ts(1), ClawID: "a", Type: audit.TypeRequest, RequestID: "r1", Format: "openai", Model: "openai/gpt-4o"},
		{TS: ts(2), ClawID: "a", Type: audit.TypeResponse, RequestID: "r1", Format: "openai", Model: "openai/gpt-4o", StatusCode: 200,
			TokensIn: audit.Ptr(10000), TokensOut: audit.Ptr(1000), CostUSD: audit.KnownCost(25_000)},
		{TS: ts(3), ClawID: "a", Type: audit.TypeResponse, RequestID: "r2", Format: "openai", Model: "local/m\x1b[31m", StatusCode: 200,
			TokensIn: audit.Ptr(5), TokensOut: audit.Ptr(1), CostUSD: audit.UnknownCost(), CostUnknown: true},
		// A retry's error, then the turn's end.
		{TS: ts(3), ClawID: "b", Type: audit.TypeError, RequestID: "r3", Format: "anthropic", Model: "anthropic/claude-sonnet-4-5", StatusCode: 429, Error: "retrying"},
		{TS: ts(4), ClawID: "b", Type: audit.TypeError, RequestID: "r3", Format: "anthropic", Model: "anthropic/claude-sonnet-4-5", StatusCode: 402, Error: "budget"},
		// Not turns: a stored object's route, a request of no agent.
		{TS: ts(5), ClawID: "a", Type: audit.TypeResponse, RequestID: "r4", Format: "responses", Route: "GET /v1/responses/x", StatusCode: 200},
		{TS: ts(6), Type: audit.TypeError, RequestID: "r5", Format: "openai", StatusCode: 401},
	}
	// A turn the log lost, from its history entry.
	entry := history.Entry{ID: "r6", AgentID: "b", Timestamp: ts(7), Format: "anthropic", Model: "anthropic/claude-sonnet-4-5",
		Status: "ok", StatusCode: 200, CostUSD: audit.KnownCost(1_500_000)}
	rep := NewReport("p", Sources{}, Filter{}, Merge(events, []history.Entry{entry}))
	var out strings.Builder
	if err := rep.WriteText(&out, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"turns (4):",
		"  TIME                      AGENT  MODEL                        STATUS  TOKENS IN  TOKENS OUT  COST (USD)  REQUEST",
		"  2026-01-02T03:04:02.000Z  a      openai/gpt-4o                200     10000      1000        0.025       r1",
		`  2026-01-02T03:04:03.000Z  a      local/m\x1b[31m              200     5          1           unpriced    r2`,
		"  2026-01-02T03:04:04.000Z  b      anthropic/claude-sonnet-4-5  402     -          -           -           r3",
		"  2026-01-02T03:04:07.000Z  b      anthropic/claude-sonnet-4-5  200     0          0           1.50        r6",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b") {
		t.Errorf("an escape sequence reached the terminal:\n%q", text)
	}
	var b strings.Builder
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Turns []map[string]any `json:"turns"`
	}
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Turns) != 4 || doc.Turns[0]["cost_usd"] != 0.025 || doc.Turns[1]["cost_usd"] != nil || doc.Turns[1]["cost_unknown"] != true ||
		doc.Turns[3]["cost_usd"] != 1.5 || doc.Turns[0]["request_id"] != "r1" {
		t.Fatalf("--json turns: %v", doc.Turns)
	}
	if _, has := doc.Turns[2]["cost_usd"]; has {
		t.Fatalf("a refused turn carries a cost: %v", doc.Turns[2])
	}
}
