package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/history"
)

// What a runner, a model or a service may write where claw later prints
// it: a name holding a newline and a forged row, the escape sequences that
// clear the screen (ESC [2J), set the window title (OSC ... BEL), ring the
// bell or return the cursor to overwrite a line (CR), C1 controls (CSI as
// U+009B), bidi overrides and isolates that reorder a line, and bytes that
// are not UTF-8.
const (
	// forgedRow would pass for a row of `claw audit`'s tool calls were the
	// newline before it printed raw.
	forgedRow   = "  2031-01-01T00:00:00.000Z  executor  trading-api.execute_trade [side-effect]  mediated  ok  0ms"
	hostileTool = "trading-api.get_market_context\n" + forgedRow
	// forgedLine would pass for a line of claw's own.
	forgedLine   = "claw: forged line"
	hostileModel = "anthropic/desk\x1b[2J\x07\u202eexecutor"
	hostileError = "upstream: \x1b[31mred\x1b[0m\r\n" + forgedLine + "\u0085\u009b2J\x1b]0;pwned\x07"
	hostileAgent = "analyst\u202e\u2066evil\u2069"
)

// TestHostileAuditRecordsAreEscaped: audit events and session history
// written by a hostile runner, model or service reach `claw audit` (text
// and --json), `claw history` and `claw inspect` as escaped text: the
// output bytes hold no control character other than the newlines claw
// writes itself, no C1 or bidi control, only UTF-8, and no line a value
// began; the JSON stays valid and keeps the values as they were.
func TestHostileAuditRecordsAreEscaped(t *testing.T) {
	dir := inObservePod(t)
	writeHostileLog(t, "hostile.log")
	appendHostileHistory(t, dir)

	for _, args := range [][]string{
		{"audit", "--log", "hostile.log"},
		{"audit", "--log", "hostile.log", "--full"},
		{"audit", "--log", "hostile.log", "--claw", "executor\x1b[2J", "--summary"},
	} {
		r := runClaw(t, "", args...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d: %s", args, r.code, r.err.String())
		}
		out := r.out.Bytes()
		assertTerminalSafe(t, fmt.Sprintf("%q stdout", args), out, "\n")
		assertTerminalSafe(t, fmt.Sprintf("%q stderr", args), r.err.Bytes(), "\n")
		assertNoForgedLine(t, fmt.Sprintf("%q", args), out)
		if args[len(args)-1] == "--summary" {
			continue
		}
		// The values are there, escaped, not dropped.
		for _, want := range []string{
			`trading-api.get_market_context\n  2031-01-01T00:00:00.000Z`,
			`anthropic/desk\x1b[2J\x07\u202eexecutor`,
			`analyst\u202e\u2066evil\u2069`,
			`upstream: \x1b[31mred\x1b[0m\r\nclaw: forged line\u0085\u009b2J`,
			`"q":"\ufffd\ufffd\u007f\u202e\u0085"`,
			`market\x07\tsummary`,
		} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("%q: %s missing from\n%s", args, want, out)
			}
		}
	}

	// --json: valid JSON, escaped as JSON, holding the values as written.
	r := runClaw(t, "", "audit", "--log", "hostile.log", "--json")
	if r.code != 0 {
		t.Fatalf("audit --json: exit %d: %s", r.code, r.err.String())
	}
	assertTerminalSafe(t, "audit --json", r.out.Bytes(), "\n")
	rep := decodeAudit(t, r.out.Bytes())
	seen := map[string]bool{}
	for _, e := range rep.Events {
		seen[e.Tool], seen[e.Model], seen[e.ClawID], seen[e.Error] = true, true, true, true
	}
	for _, v := range []string{hostileTool, hostileModel, hostileAgent, hostileError} {
		if !seen[v] {
			t.Errorf("audit --json lost %q", v)
		}
	}

	// claw history: NDJSON, every line valid JSON.
	r = runClaw(t, "", "history", "executor")
	if r.code != 0 {
		t.Fatalf("history: exit %d: %s", r.code, r.err.String())
	}
	assertTerminalSafe(t, "history", r.out.Bytes(), "\n")
	for i, line := range bytes.Split(bytes.TrimSuffix(r.out.Bytes(), []byte("\n")), []byte("\n")) {
		if !json.Valid(line) {
			t.Errorf("history line %d is not JSON: %q", i+1, line)
		}
	}
	es := decodeNDJSON(t, r.out.Bytes())
	if last := es[len(es)-1]; last.AgentID != "executor\x1b[2J" || last.ToolTrace[0].ToolCalls[0].Name != hostileTool {
		t.Errorf("history lost the values: agent %q, tool %q", last.AgentID, last.ToolTrace[0].ToolCalls[0].Name)
	}
}

// TestHostileDescriptorIsEscapedByInspect: a descriptor is the service's
// word (read from its image, or discovered from it); `claw inspect`
// escapes what it says.
func TestHostileDescriptorIsEscapedByInspect(t *testing.T) {
	dir := inObservePod(t)
	desc := filepath.Join(dir, "trading-api", ".claw-describe.json")
	data, err := os.ReadFile(desc)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	d["description"] = "Desk API\x1b[2J\x07\r\n" + forgedLine + "\u202e\x7f"
	d["endpoints"].([]any)[0].(map[string]any)["description"] = "context\x1b]0;pwned\x07\t\u2066x\u2069"
	data, _ = json.Marshal(d)
	if err := os.WriteFile(desc, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"inspect"}, {"inspect", "trading-api"}, {"inspect", "--json"}} {
		r := runClaw(t, "", args...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d: %s", args, r.code, r.err.String())
		}
		assertTerminalSafe(t, fmt.Sprintf("%q", args), r.out.Bytes(), "\n")
		assertNoForgedLine(t, fmt.Sprintf("%q", args), r.out.Bytes())
		if args[len(args)-1] == "--json" {
			var rep struct {
				Services []struct{ Name, Description string }
			}
			if err := json.Unmarshal(r.out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			for _, s := range rep.Services {
				if s.Name == "trading-api" && s.Description != d["description"] {
					t.Errorf("inspect --json: description %q", s.Description)
				}
			}
			continue
		}
		if want := `description: Desk API\x1b[2J\x07\r\nclaw: forged line\u202e\x7f`; !strings.Contains(r.out.String(), want) {
			t.Errorf("%q: %s missing from\n%s", args, want, r.out.String())
		}
	}
}

// writeHostileLog writes cllama audit events with hostile values.
func writeHostileLog(t *testing.T, path string) {
	t.Helper()
	ts := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	ms := func(v int64) *int64 { return &v }
	events := []audit.Event{
		{TS: ts, ClawID: "executor", Type: audit.TypeRequest, RequestID: "req_hostile_1", Format: "anthropic", Model: hostileModel},
		{TS: ts.Add(time.Millisecond), ClawID: "executor", Type: audit.TypeToolCall, RequestID: "req\x1b]0;pwned\x07", Model: hostileModel,
			Tool: hostileTool, Service: "trading-api", Round: 1, Mode: "mediated", Status: "ok\rinvalid_arguments", LatencyMS: ms(1)},
		{TS: ts.Add(2 * time.Millisecond), ClawID: hostileAgent, Type: audit.TypeError, RequestID: "req_hostile_2", Model: hostileModel,
			StatusCode: 502, Error: hostileError},
		{TS: ts.Add(3 * time.Millisecond), ClawID: "executor", Type: audit.TypeFeedFetch, Feed: "market\x07\tsummary", Status: "ok", LatencyMS: ms(0)},
		{TS: ts.Add(4 * time.Millisecond), ClawID: "executor\x1b[2J", Type: audit.TypeResponse, RequestID: "req_hostile_1", Model: hostileModel,
			PolicyFiltered: []audit.Filtered{{Tool: "trading-api.execute_trade\x1b[8m", Rules: []string{"rule\n" + forgedLine}, Error: "bad\x1b[2J"}}},
	}
	var b bytes.Buffer
	for _, e := range events {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// appendHostileHistory adds an entry to the executor's session history as
// a hostile writer could: raw bytes that are not UTF-8, DEL, C1 and bidi
// characters inside the JSON strings of the arguments and result, escapes
// in the agent id, the model, the tool name and the error.
func appendHostileHistory(t *testing.T, dir string) {
	t.Helper()
	tool, _ := json.Marshal(hostileTool)
	line := `{"id":"req_hostile_3","timestamp":"2026-11-25T07:00:01Z","agent_id":"executor\u001b[2J","pod":"desk","format":"openai",` +
		"\"model\":\"gpt\xff\xfe\\u001b]0;pwned\\u0007\",\"status\":\"error\",\"status_code\":500,\"latency_ms\":3," +
		"\"request\":{\"messages\":[{\"role\":\"user\",\"content\":\"\u202e\x7f\u009b2J raw\xff\"}]}," +
		"\"response\":{\"text\":\"\xff bad \u202e\"},\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}," +
		`"tool_trace":[{"round":1,"tool_calls":[{"name":` + string(tool) +
		",\"arguments\":{\"q\":\"\xff\xfe\x7f\u202e\u0085\"},\"result\":{\"ok\":false,\"error\":{\"code\":\"bad\\u001b[2J\",\"message\":\"\u009b31m\"}}," +
		`"latency_ms":1,"service":"trading-api","mode":"mediated"}],"round_usage":{"prompt_tokens":1,"completion_tokens":1}}],` +
		`"error":"model said \u001b[2J\r\n` + forgedLine + `"}` + "\n"
	path := history.Path(filepath.Join(dir, filepath.FromSlash(compile.HistoryDir)), "executor")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}

// assertTerminalSafe fails unless out is UTF-8 holding no control
// character but those in allowed, no C1 control, and no format character
// or line or paragraph separator (bidi controls, zero-width characters).
func assertTerminalSafe(t *testing.T, what string, out []byte, allowed string) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Errorf("%s: not UTF-8:\n%q", what, out)
		return
	}
	for i, r := range string(out) {
		if strings.ContainsRune(allowed, r) {
			continue
		}
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			t.Errorf("%s: %U at byte %d: %q", what, r, i, out[max(0, i-40):min(len(out), i+40)])
			return
		}
	}
}

// assertNoForgedLine fails when a line of out starts with what a value
// held after a newline.
func assertNoForgedLine(t *testing.T, what string, out []byte) {
	t.Helper()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, forgedRow) || strings.HasPrefix(line, forgedLine) {
			t.Errorf("%s: a forged line: %q", what, line)
		}
	}
}

// hostileWrapperEnv makes this test binary a hostile claw-mcp-stdio
// (`claw discover --local --wrapper <test binary>`): "ok" lists tools,
// "stopped" reports that its server did not start.
const hostileWrapperEnv = "CLAW_TEST_HOSTILE_WRAPPER"

func init() {
	if mode := os.Getenv(hostileWrapperEnv); mode != "" {
		os.Exit(hostileWrapper(mode))
	}
}

// hostileWrapper serves /healthz and MCP on a loopback port as
// claw-mcp-stdio does, with an MCP server whose tool names, descriptions
// and error text are hostile, and writes hostile bytes on its stderr (what
// the wrapper relays from the server's), until it is told to stop.
func hostileWrapper(mode string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprint(os.Stderr, "\x1b[2Jserver starting\x07\u202e\r\n"+forgedLine+"\n")
	fmt.Fprintf(os.Stderr, "claw-mcp-stdio listening addr=%s\n", ln.Addr())
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile\x1b]0;pwned\x07", Version: "1"}, nil)
	schema := map[string]any{"type": "object"}
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	for _, tl := range []*mcp.Tool{
		{Name: "lookup", Description: "Looks up\x1b[2J\u202e things\r\n" + forgedLine, InputSchema: schema},
		{Name: "evil\n" + forgedLine, InputSchema: schema},
		{Name: "bell\x07\u202e", InputSchema: schema},
	} {
		srv.AddTool(tl, noop)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if mode == "stopped" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "stopped", "last_error": "\x1b[2Jboom\x07\r\n" + forgedLine})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "ok", "server": "hostile\x1b[2J"})
	})
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() { _ = http.Serve(ln, mux) }()
	<-ctx.Done()
	return 0
}

// TestHostileDiscoveryIsEscaped: what a stdio MCP service lists and says
// (tool names, its output with --verbose, the reason it did not start)
// reaches `claw discover`'s output escaped. (With --verbose the service's
// output keeps its lines: it is shown as it came, escaped, and may hold
// any line; without it, no line of claw's output is the service's.)
func TestHostileDiscoveryIsEscaped(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "claw-pod.yml")
	pod := "services:\n  echo:\n    image: clawgo/claw-mcp-stdio:dev\n    x-claw:\n      mcp-stdio: {command: hostile-server}\n"
	if err := os.WriteFile(file, []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(hostileWrapperEnv, "ok")
	h := newHarness()
	if code := h.run("discover", "--local", "--verbose", "--wrapper", exe, "-f", file); code != ExitOK {
		t.Fatalf("discover --verbose: exit %d, stderr:\n%s", code, h.err.String())
	}
	assertTerminalSafe(t, "discover --verbose stdout", h.out.Bytes(), "\n")
	assertTerminalSafe(t, "discover --verbose stderr", h.err.Bytes(), "\n")
	if want := `\x1b[2Jserver starting\x07\u202e`; !strings.Contains(h.err.String(), want) {
		t.Errorf("discover --verbose: stderr lacks %s:\n%s", want, h.err.String())
	}
	h = newHarness()
	if code := h.run("discover", "--local", "--wrapper", exe, "-f", file); code != ExitOK {
		t.Fatalf("discover: exit %d, stderr:\n%s", code, h.err.String())
	}
	assertTerminalSafe(t, "discover stdout", h.out.Bytes(), "\n")
	assertTerminalSafe(t, "discover stderr", h.err.Bytes(), "\n")
	assertNoForgedLine(t, "discover stdout", h.out.Bytes())
	assertNoForgedLine(t, "discover stderr", h.err.Bytes())
	if !strings.Contains(h.out.String(), "echo: 1 tool(s) [lookup]") || !strings.Contains(h.err.String(), `tool "evil\nclaw: forged line" skipped`) {
		t.Errorf("discover printed:\n%s\nstderr:\n%s", h.out.String(), h.err.String())
	}

	t.Setenv(hostileWrapperEnv, "stopped")
	h = newHarness()
	if code := h.run("discover", "--local", "--wrapper", exe, "-f", file); code != ExitFailure {
		t.Fatalf("discover of a server that did not start: exit %d, stderr:\n%s", code, h.err.String())
	}
	assertTerminalSafe(t, "discover error", h.err.Bytes(), "\n")
	assertNoForgedLine(t, "discover error", h.err.Bytes())
	if want := `the stdio MCP server did not start: \x1b[2Jboom\x07\r\nclaw: forged line`; !strings.Contains(h.err.String(), want) {
		t.Errorf("stderr lacks %s:\n%s", want, h.err.String())
	}
}

// TestHostileContainerLogsAreEscaped: `claw logs` prints the containers'
// output (the agents' and services' own) line by line, escaped.
func TestHostileContainerLogsAreEscaped(t *testing.T) {
	inObservePod(t)
	logs := "executor-1  | \x1b[2Jcleared\x07\r" + forgedLine + "\n" +
		"executor-1  | tab\there \u202eevil\xff\r\n" +
		"cllama-1    | ok\n"
	r := runClaw(t, logs, "logs")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err.String())
	}
	want := "executor-1  | \\x1b[2Jcleared\\x07\\r" + forgedLine + "\n" +
		"executor-1  | tab\there \\u202eevil\\xff\r\n" +
		"cllama-1    | ok\n"
	if r.out.String() != want {
		t.Errorf("claw logs printed\n%q\nwant\n%q", r.out.String(), want)
	}
}
