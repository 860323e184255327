package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/auditlog"
	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/history"
)

// obsRun runs claw with args against injected streams and a fake engine
// whose `logs` writes logs to its standard output.
type obsRun struct {
	out, err bytes.Buffer
	code     int
	engine   *logEngine
}

// logEngine is a compose engine that answers `logs` with a canned log.
type logEngine struct {
	cfg   EngineConfig
	log   string
	fail  error
	calls [][]string
}

func (e *logEngine) Containers(context.Context) ([]Container, error) { return nil, nil }

func (e *logEngine) Compose(_ context.Context, args ...string) error {
	e.calls = append(e.calls, args)
	if e.fail != nil {
		return e.fail
	}
	_, err := io.WriteString(e.cfg.IO.Out, e.log)
	return err
}

func runClaw(t *testing.T, engineLog string, args ...string) *obsRun {
	t.Helper()
	r := &obsRun{engine: &logEngine{log: engineLog}}
	f := &Factory{
		IO: IOStreams{In: strings.NewReader(""), Out: &r.out, ErrOut: &r.err},
		Engine: func(_ context.Context, cfg EngineConfig) (Engine, error) {
			r.engine.cfg = cfg
			return r.engine, nil
		},
		Images: func() compile.ImageSource { return nil },
	}
	r.code = Main(context.Background(), args, f)
	return r
}

// golden compares got with testdata/observe/golden/<name>; -update
// rewrites it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if updateGoldens() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// goldenDir is testdata/observe/golden as an absolute path (the working
// directory at start-up is the package's), so tests that change directory
// still find it.
var goldenDir = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Join(wd, observeDir, "golden")
}()

// inObservePod prepares the fixture pod and makes it the working
// directory, so the default -f ./claw-pod.yml finds it.
func inObservePod(t *testing.T) string {
	t.Helper()
	dir := observePod(t)
	t.Chdir(dir)
	return dir
}

func TestAuditGoldenText(t *testing.T) {
	inObservePod(t)
	r := runClaw(t, "", "audit", "--log", "cllama.log")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err.String())
	}
	golden(t, "audit.txt", r.out.Bytes())
}

func TestAuditGoldenJSON(t *testing.T) {
	inObservePod(t)
	r := runClaw(t, "", "audit", "--log", "cllama.log", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err.String())
	}
	golden(t, "audit.json", r.out.Bytes())
}

func decodeAudit(t *testing.T, b []byte) auditlog.Report {
	t.Helper()
	var rep auditlog.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return rep
}

// Every managed call of the recording is in both the log and the trace:
// the merge must report each once, completed with arguments and result.
func TestAuditMergesEachCallOnce(t *testing.T) {
	inObservePod(t)
	r := runClaw(t, "", "audit", "--log", "cllama.log", "--json", "--type", "tool_call")
	rep := decodeAudit(t, r.out.Bytes())
	if len(rep.Events) != 7 || rep.Summary.Total.ToolCalls != 7 || rep.Summary.Total.ToolErrors != 3 {
		t.Fatalf("%d events, summary %+v", len(rep.Events), rep.Summary.Total)
	}
	for _, e := range rep.Events {
		if e.Source != auditlog.SourceBoth || e.Arguments == nil || e.Result == nil {
			t.Errorf("call %s round %d of %s: source %s, arguments %s, result %s", e.Tool, e.Round, e.RequestID, e.Source, e.Arguments, e.Result)
		}
	}
	// Without the log (a recreated cllama container), history alone gives
	// the same calls and still counts exchanges and tokens.
	if err := os.WriteFile("empty.log", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runClaw(t, "", "audit", "--log", "empty.log", "--json")
	rep = decodeAudit(t, r.out.Bytes())
	tot := rep.Summary.Total
	if tot.ToolCalls != 7 || tot.ToolErrors != 3 || tot.Requests != 6 || tot.Responses != 5 || tot.Errors != 1 || tot.TokensIn != 1975 || tot.TokensOut != 136 {
		t.Fatalf("history only: %+v", tot)
	}
	for _, e := range rep.Events {
		if e.Source != auditlog.SourceHistory {
			t.Fatalf("history only: source %q", e.Source)
		}
	}
}

func TestAuditFilters(t *testing.T) {
	inObservePod(t)
	r := runClaw(t, "", "audit", "--log", "cllama.log", "--json", "--claw", "executor", "--type", "tool_call,response")
	rep := decodeAudit(t, r.out.Bytes())
	if len(rep.Summary.Agents) != 1 || rep.Summary.Agents[0].Agent != "executor" {
		t.Fatalf("agents %+v", rep.Summary.Agents)
	}
	for _, e := range rep.Events {
		if e.ClawID != "executor" || (e.Type != audit.TypeToolCall && e.Type != audit.TypeResponse) {
			t.Fatalf("kept %s %s", e.ClawID, e.Type)
		}
	}
	if s := rep.Summary.Total; s.ToolCalls != 5 || s.Responses != 3 || s.Requests != 0 {
		t.Fatalf("executor: %+v", s)
	}
	// --since as an RFC 3339 time after the recording keeps nothing.
	r = runClaw(t, "", "audit", "--log", "cllama.log", "--json", "--since", "2099-01-01T00:00:00Z")
	if rep := decodeAudit(t, r.out.Bytes()); len(rep.Events) != 0 || rep.Summary.Total.Requests != 0 {
		t.Fatalf("since 2099: %d events", len(rep.Events))
	}
	// --since as a duration counts back from the clock.
	last := lastEventTime(t)
	var out bytes.Buffer
	f := &Factory{IO: IOStreams{Out: &out, ErrOut: io.Discard}}
	err := auditRun(context.Background(), f, &AuditOptions{PodOptions: PodOptions{File: "claw-pod.yml"}, Log: "cllama.log", JSON: true,
		Since: "1ms", now: func() time.Time { return last }})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range decodeAudit(t, out.Bytes()).Events {
		if e.TS.Before(last.Add(-time.Millisecond)) {
			t.Fatalf("kept %s at %s, before %s", e.Type, e.TS, last.Add(-time.Millisecond))
		}
	}
	for _, bad := range [][]string{{"--type", "bogus"}, {"--since", "yesterday"}, {"--since", "-5m"}} {
		r := runClaw(t, "", append([]string{"audit", "--log", "cllama.log"}, bad...)...)
		if r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, r.code, ExitUsage, r.err.String())
		}
	}
}

func lastEventTime(t *testing.T) time.Time {
	t.Helper()
	data, err := os.ReadFile("cllama.log")
	if err != nil {
		t.Fatal(err)
	}
	es, _, err := auditlog.ReadAll(bytes.NewReader(data))
	if err != nil || len(es) == 0 {
		t.Fatal(err, len(es))
	}
	return es[len(es)-1].TS
}

// The default source is `docker compose logs --no-color cllama`: compose's
// prefixes, cllama's own diagnostics and broken lines must not change the
// report, and broken lines are counted.
// --since takes a clock time (today, or yesterday when it is still to
// come) beside durations and RFC 3339 times.
func TestParseSince(t *testing.T) {
	zone := time.FixedZone("UTC+2", 2*3600)
	now := time.Date(2025, 3, 10, 18, 30, 0, 0, zone)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}},
		{"30m", now.Add(-30 * time.Minute)},
		{"18:21", time.Date(2025, 3, 10, 18, 21, 0, 0, zone)},
		{"9:05", time.Date(2025, 3, 10, 9, 5, 0, 0, zone)},
		{"18:30", now},
		{"18:21:30", time.Date(2025, 3, 10, 18, 21, 30, 0, zone)},
		{"23:00", time.Date(2025, 3, 9, 23, 0, 0, 0, zone)},
		{"00:00", time.Date(2025, 3, 10, 0, 0, 0, 0, zone)},
		{"2025-03-01T10:00:00Z", time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)},
	} {
		got, err := parseSince(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("--since %q: got %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"24:00", "18:60", "18:21pm", "yesterday", "-5m"} {
		if _, err := parseSince(bad, now); err == nil || !strings.Contains(err.Error(), "--since") {
			t.Errorf("--since %q: got %v, want a usage error", bad, err)
		}
	}
	if _, err := parseSince("noon", now); err == nil || !strings.Contains(err.Error(), "a clock time (18:21") {
		t.Errorf("the error does not mention clock times: %v", err)
	}
}

func TestAuditFromComposeLogs(t *testing.T) {
	inObservePod(t)
	data, err := os.ReadFile("cllama.log")
	if err != nil {
		t.Fatal(err)
	}
	var composed strings.Builder
	composed.WriteString("cllama-1  | cllama: listening on :8080 (pod \"desk\", context /claw/context, providers: anthropic, openai, history: /claw/history)\n")
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		prefix := "cllama-1  | "
		if i%2 == 1 {
			prefix = "desk_cllama_1  | " // docker-compose 1.29
		}
		composed.WriteString(prefix + line + "\n")
		if i == 3 {
			composed.WriteString("cllama-1  | {\"ts\":\"2026-11-22T06:13:51Z\",\"type\":\"respo\n") // torn
			composed.WriteString("cllama-1  | {\"claw_id\":\"analyst\"}\n")                         // no type or ts
			composed.WriteString("cllama-1  |\n")
		}
	}
	r := runClaw(t, composed.String(), "audit", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err.String())
	}
	if got := r.engine.calls; len(got) != 1 || strings.Join(got[0], " ") != "logs --no-color cllama" {
		t.Fatalf("compose calls %q", got)
	}
	if r.engine.cfg.Project != "desk" || r.engine.cfg.File != compile.GeneratedFile {
		t.Fatalf("engine config %+v", r.engine.cfg)
	}
	fromCompose := decodeAudit(t, r.out.Bytes())
	if st := fromCompose.Sources.LogStats; st.Malformed != 2 || st.Other != 1 || st.Events != 28 {
		t.Fatalf("log stats %+v", st)
	}
	r = runClaw(t, "", "audit", "--log", "cllama.log", "--json")
	fromFile := decodeAudit(t, r.out.Bytes())
	a, _ := json.Marshal(fromCompose.Summary)
	b, _ := json.Marshal(fromFile.Summary)
	if !bytes.Equal(a, b) {
		t.Fatalf("summaries differ:\n%s\n%s", a, b)
	}

	// A pod that is not running: the engine fails, and the message says how
	// to read a saved log instead.
	r = &obsRun{}
	f := &Factory{IO: IOStreams{Out: &r.out, ErrOut: &r.err}, Engine: func(_ context.Context, cfg EngineConfig) (Engine, error) {
		return &logEngine{cfg: cfg, fail: fmt.Errorf("exit status 1")}, nil
	}}
	if code := Main(context.Background(), []string{"audit"}, f); code != ExitFailure || !strings.Contains(r.err.String(), "--log FILE") {
		t.Fatalf("exit %d: %s", code, r.err.String())
	}
}

func TestAuditReadsStdin(t *testing.T) {
	inObservePod(t)
	data, _ := os.ReadFile("cllama.log")
	var out, errb bytes.Buffer
	f := &Factory{IO: IOStreams{In: bytes.NewReader(data), Out: &out, ErrOut: &errb}}
	if code := Main(context.Background(), []string{"audit", "--log", "-", "--summary"}, f); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "events from standard input") || strings.Contains(out.String(), "tool calls (") {
		t.Fatalf("%s", out.String())
	}
}

func TestInspectGolden(t *testing.T) {
	inObservePod(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"inspect.txt", []string{"inspect"}},
		{"inspect.json", []string{"inspect", "--json"}},
		{"inspect-executor.txt", []string{"inspect", "executor"}},
		{"inspect-trading-api.txt", []string{"inspect", "trading-api"}},
	} {
		r := runClaw(t, "", c.args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, r.code, r.err.String())
		}
		golden(t, c.name, r.out.Bytes())
	}
	r := runClaw(t, "", "inspect", "nobody")
	if r.code != ExitUsage || !strings.Contains(r.err.String(), "known: analyst, claw-model, executor, trading-api") {
		t.Fatalf("exit %d: %s", r.code, r.err.String())
	}
}

// A descriptor edited after compiling, and generated files that differ
// from what the pod compiles to now, show up as warnings, not as a
// silently different view.
func TestInspectWarnsAboutDrift(t *testing.T) {
	dir := inObservePod(t)
	desc := filepath.Join(dir, "trading-api", ".claw-describe.json")
	data, _ := os.ReadFile(desc)
	edited := bytes.Replace(data, []byte(`"Place a paper market order"`), []byte(`"Place a paper market order now"`), 1)
	if bytes.Equal(edited, data) {
		t.Fatal("the fixture descriptor changed; update the edit")
	}
	if err := os.WriteFile(desc, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	// The executor's compiled grants as an older compile left them.
	tools := filepath.Join(dir, filepath.FromSlash(compile.StagedContextDir), "executor", "tools.json")
	tm, _ := os.ReadFile(tools)
	var doc map[string]any
	if err := json.Unmarshal(tm, &doc); err != nil {
		t.Fatal(err)
	}
	doc["tools"] = doc["tools"].([]any)[:1]
	tm, _ = json.Marshal(doc)
	if err := os.WriteFile(tools, tm, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runClaw(t, "", "inspect", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err.String())
	}
	var rep struct{ Warnings []string }
	_ = json.Unmarshal(r.out.Bytes(), &rep)
	joined := strings.Join(rep.Warnings, "\n")
	if !strings.Contains(joined, "descriptor trading-api/.claw-describe.json of \"trading-api\" changed after the pod was compiled") || !strings.Contains(joined, "agent executor: the generated tools.json grants [trading-api.get_market_context], the pod now grants [trading-api.execute_trade, trading-api.get_market_context]") {
		t.Fatalf("warnings:\n%s", joined)
	}
	// A descriptor touched but not changed is no drift.
	if err := os.WriteFile(desc, data, 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	_ = os.Chtimes(desc, future, future)
	r = runClaw(t, "", "inspect", "--json")
	if strings.Contains(r.out.String(), "changed after the pod was compiled") {
		t.Fatalf("a touched descriptor counts as changed:\n%s", r.out.String())
	}
}

func TestHistoryExport(t *testing.T) {
	inObservePod(t)
	r := runClaw(t, "", "history", "executor")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err.String())
	}
	golden(t, "history-executor.ndjson", r.out.Bytes())
	all := decodeNDJSON(t, r.out.Bytes())
	if len(all) != 3 {
		t.Fatalf("%d entries", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Timestamp.Before(all[i-1].Timestamp) {
			t.Fatal("not newest last")
		}
	}
	ids := func(es []history.Entry) string {
		var s []string
		for _, e := range es {
			s = append(s, e.ID)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		args []string
		want []history.Entry
	}{
		{[]string{"--limit", "1"}, all[2:]},
		{[]string{"--limit", "2"}, all[1:]},
		{[]string{"--after", all[0].ID, "--limit", "1"}, all[1:2]},
		{[]string{"--after", all[1].ID}, all[2:]},
		{[]string{"--after", all[2].ID}, nil},
		{[]string{"--after", all[0].Timestamp.Format(time.RFC3339Nano)}, all[1:]},
		{[]string{"--after", "2000-01-01T00:00:00Z", "--limit", "2"}, all[:2]},
	} {
		r := runClaw(t, "", append([]string{"history", "executor"}, c.args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, r.code, r.err.String())
		}
		if got := decodeNDJSON(t, r.out.Bytes()); ids(got) != ids(c.want) {
			t.Errorf("%v: got %s, want %s", c.args, ids(got), ids(c.want))
		}
	}
	for _, bad := range [][]string{{"history"}, {"history", "nobody"}, {"history", "executor", "--after", "nope"}, {"history", "executor", "--limit", "-1"}} {
		if r := runClaw(t, "", bad...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", bad, r.code, ExitUsage, r.err.String())
		}
	}
}

// A torn or foreign line in a history file is skipped with a warning; an
// entry written without an id gets a stable one.
func TestHistoryMalformedAndMissingIDs(t *testing.T) {
	dir := inObservePod(t)
	path := history.Path(filepath.Join(dir, filepath.FromSlash(compile.HistoryDir)), "analyst")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(f, "not json\n"+`{"timestamp":"2099-01-01T00:00:00Z","agent_id":"analyst","format":"openai","model":"m","status":"ok","status_code":200,"latency_ms":1,"request":{},"usage":{"prompt_tokens":1,"completion_tokens":1}}`+"\n"+`{"id":"torn`)
	f.Close()
	r := runClaw(t, "", "history", "analyst", "--limit", "1")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err.String())
	}
	got := decodeNDJSON(t, r.out.Bytes())
	if len(got) != 1 || got[0].ID != "analyst#4" || !strings.Contains(r.err.String(), "2 malformed line(s) skipped (lines 4 and 6)") {
		t.Fatalf("entries %+v, stderr %s", got, r.err.String())
	}
	r = runClaw(t, "", "audit", "--log", "cllama.log", "--json", "--summary")
	if rep := decodeAudit(t, r.out.Bytes()); rep.Sources.HistoryMalformed != 2 {
		t.Fatalf("history malformed %d", rep.Sources.HistoryMalformed)
	}
	if want := "warning: .claw-runtime/history/analyst/history.jsonl: 2 malformed line(s) skipped (lines 4 and 6)"; !strings.Contains(r.err.String(), want) {
		t.Fatalf("audit stderr %q, want %q", r.err.String(), want)
	}
}

func decodeNDJSON(t *testing.T, b []byte) []history.Entry {
	t.Helper()
	var out []history.Entry
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var e history.Entry
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// All three verbs take -f like compile, and refuse a pod file changed
// since it was compiled (by content: touching it is no change), or one
// never compiled.
func TestObserveVerbsPodFile(t *testing.T) {
	dir := observePod(t)
	podFile := filepath.Join(dir, "claw-pod.yml")
	verbs := [][]string{
		{"audit", "-f", podFile, "--log", filepath.Join(dir, "cllama.log")},
		{"inspect", "-f", podFile},
		{"history", "analyst", "--file", podFile},
	}
	for _, v := range verbs {
		if r := runClaw(t, "", v...); r.code != 0 {
			t.Fatalf("%v: exit %d: %s", v, r.code, r.err.String())
		}
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(podFile, future, future); err != nil {
		t.Fatal(err)
	}
	for _, v := range verbs {
		if r := runClaw(t, "", v...); r.code != 0 {
			t.Errorf("%v after touching the pod file: exit %d: %s", v, r.code, r.err.String())
		}
	}
	data, _ := os.ReadFile(podFile)
	if err := os.WriteFile(podFile, append(data, []byte("# edited\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range verbs {
		r := runClaw(t, "", v...)
		if r.code != ExitFailure || !strings.Contains(r.err.String(), "changed since it was compiled") || !strings.Contains(r.err.String(), "run `claw compile -f "+podFile+"`") {
			t.Errorf("%v: exit %d: %s", v, r.code, r.err.String())
		}
	}
	// A pod compiled by an earlier claw has no record: time decides.
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(compile.RecordFile))); err != nil {
		t.Fatal(err)
	}
	for _, v := range verbs {
		r := runClaw(t, "", v...)
		if r.code != ExitFailure || !strings.Contains(r.err.String(), "changed since it was compiled (changed ") {
			t.Errorf("%v without a record: exit %d: %s", v, r.code, r.err.String())
		}
	}
	if err := os.Remove(filepath.Join(dir, compile.GeneratedFile)); err != nil {
		t.Fatal(err)
	}
	for _, v := range verbs {
		r := runClaw(t, "", v...)
		if r.code != ExitFailure || !strings.Contains(r.err.String(), "has not been compiled") {
			t.Errorf("%v: exit %d: %s", v, r.code, r.err.String())
		}
	}
	t.Chdir(t.TempDir())
	if r := runClaw(t, "", "history", "analyst"); r.code != ExitFailure || !strings.Contains(r.err.String(), "claw-pod.yml") {
		t.Errorf("no pod file: exit %d: %s", r.code, r.err.String())
	}
}

// claw audit lists each turn with what it cost, and --json carries it as
// cost_usd.
func TestAuditShowsCostPerTurn(t *testing.T) {
	inObservePod(t)
	log := `{"ts":"2026-11-25T06:53:06Z","claw_id":"analyst","type":"request","request_id":"req_c1","format":"openai","model":"openai/desk-analyst"}
{"ts":"2026-11-25T06:53:07Z","claw_id":"analyst","type":"response","request_id":"req_c1","format":"openai","model":"openai/desk-analyst","status_code":200,"tokens_in":10000,"tokens_out":1000,"cost_usd":0.025}
`
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		f := &Factory{IO: IOStreams{In: strings.NewReader(log), Out: &out, ErrOut: &errb}}
		if code := Main(context.Background(), append([]string{"audit", "--log", "-", "--since", "2026-11-25T06:53:00Z", "--claw", "analyst"}, args...), f); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	if out := run(); !regexp.MustCompile(`(?m)^  \S+Z\s+analyst\s+openai/desk-analyst\s+200\s+10000\s+1000\s+0\.025\s+req_c1$`).MatchString(out) {
		t.Fatalf("no turn with its cost:\n%s", out)
	}
	rep := decodeAudit(t, []byte(run("--json")))
	i := slices.IndexFunc(rep.Turns, func(tn auditlog.Turn) bool { return tn.RequestID == "req_c1" })
	if i < 0 || rep.Turns[i].CostUSD != audit.KnownCost(25_000) {
		t.Fatalf("--json turns %+v", rep.Turns)
	}
}
