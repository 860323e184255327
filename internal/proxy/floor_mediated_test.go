package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/mediate"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/testproc"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// A mediated turn against the floor. The runner sends one request; cllama
// presents its managed tool, the model calls it, cllama runs the call on
// the tool service and asks the model again, which answers: two upstream
// rounds and one tool call, with session history and the continuity file
// store on (as cllama runs with a history directory).
//
// The fake provider and the tool service run in a process of their own
// (this test binary, started again with floorServicesEnv set), so the
// process CPU measured here is the runner's client and the proxies only,
// never the services. The summary's rows:
//
//   - CPU/turn: DIRECT is the runner's one request sent straight to the
//     provider, which answers with text (the runner's own cost: its
//     client); CLLAMA is the mediated turn, so ADDED: CLLAMA is cllama's
//     own CPU for the whole turn (both rounds, the tool call, continuity,
//     history and audit, and the HTTP of all four exchanges). ADDED: FLOOR
//     is what the bare reverse proxy adds to the same traffic: the two
//     model requests (as cllama sends them) and the tool call, sent by the
//     runner through it, less the same three sent straight; FLOOR is
//     DIRECT plus that. CLLAMA ÷ FLOOR is then the mediated turn's cost as
//     a multiple of relaying its three exchanges.
//   - p50: the turn's latency when the runner makes the three calls itself
//     (DIRECT), makes them through the bare proxy (FLOOR), and through
//     cllama in one request (CLLAMA).
//
// The continuity store is where cllama keeps it: a log in a directory on
// the benchmark's disk.

const floorServicesEnv = "CLAWGO_FLOOR_SERVICES"

func init() {
	if os.Getenv(floorServicesEnv) == "1" {
		os.Exit(serveFloorServices())
	}
}

// floorToolCall is the model's first answer: one call of the managed tool.
var floorToolCall = []byte(`{"id":"chatcmpl-m","object":"chat.completion","created":1,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"svc__lookup","arguments":"{\"q\":\"ABC\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":250,"completion_tokens":20,"total_tokens":270}}`)

// serveFloorServices is the helper process: the provider and the tool
// service on loopback, their URLs on one line of stdout, until stdin
// closes.
func serveFloorServices() int {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		// A request carrying tools but no tool result is cllama's first
		// round: call the tool. Anything else gets the text answer.
		if bytes.Contains(body, []byte(`"tools":`)) && !bytes.Contains(body, []byte(`"role":"tool"`)) {
			_, _ = w.Write(floorToolCall)
			return
		}
		_, _ = w.Write(benchResponse)
	}))
	defer provider.Close()
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"symbol":"ABC","price":190.5,"currency":"USD"}`))
	}))
	defer svc.Close()
	fmt.Printf("%s %s\n", provider.URL, svc.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startFloorServices starts the helper process and returns the provider's
// and the tool service's URLs.
func startFloorServices(b *testing.B) (provider, svc string) {
	f := testproc.Helper(b, floorServicesEnv)
	if len(f) != 2 {
		b.Fatalf("helper process said %q", f)
	}
	return f[0], f[1]
}

// newMediatedRig is cllama with the real Mediator and executor, one
// agent with one managed tool, session history, and the continuity store
// in stateDir, in front of provider.
func newMediatedRig(b *testing.B, provider, svc, stateDir string) *benchRig {
	dir := b.TempDir()
	root, histDir := filepath.Join(dir, "context"), filepath.Join(dir, "history")
	writeFileB(b, filepath.Join(root, "alice", "metadata.json"), `{"token":"`+aliceToken+`"}`)
	writeFileB(b, filepath.Join(root, "alice", "tools.json"), `{"version":1,"tools":[{"name":"svc.lookup","description":"look up a symbol",
"inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},
"execution":{"transport":"http","service":"svc","base_url":"`+svc+`","method":"POST","path":"/lookup"}}]}`)
	writeFileB(b, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"`+provider+`/v1","api_key":"k"}}}`)
	hist, err := history.NewWriter(histDir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = hist.Close() })
	rec := recorder.New(audit.New(io.Discard), hist)
	ex := toolexec.New(toolexec.Options{})
	b.Cleanup(func() { _ = ex.Close() })
	med, err := mediate.New(mediate.Options{Runner: ex, Recorder: rec, StateDir: stateDir})
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth"), HistoryDir: histDir}
	srv, err := New(cfg, Options{Recorder: rec, Mediator: med})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	front := httptest.NewServer(srv)
	b.Cleanup(front.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchRig{upstream: provider, proxy: front.URL, client: &http.Client{Transport: tr}, srv: srv}
}

// mediatedTurn is one conversation shape: the runner's request (msgs
// earlier messages, alternating user and assistant, about 250 bytes each,
// or 0 for a 1 KB request) whose last user message differs turn by turn,
// so each turn ends at a visible transcript of its own (a turn repeating
// another's would make its continuity key ambiguous: another path), and
// the two model requests cllama makes of it.
type mediatedTurn struct {
	prefix string
}

const (
	// floorToolDef is the managed tool as cllama presents it.
	floorToolDef = `{"type":"function","function":{"name":"svc__lookup","description":"look up a symbol","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}`
	// floorHidden is the hidden round cllama appends for the second call.
	floorHidden = `,{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"svc__lookup","arguments":"{\\"q\\":\\"ABC\\"}"}}]}` +
		`,{"role":"tool","tool_call_id":"call_1","content":"{\\"ok\\":true,\\"data\\":{\\"symbol\\":\\"ABC\\",\\"price\\":190.5,\\"currency\\":\\"USD\\"}}"}`
)

func newMediatedTurn(msgs int) mediatedTurn {
	var head strings.Builder
	head.WriteString(`"stream":false,"temperature":0.2,"messages":[{"role":"system","content":"be brief"}`)
	line := strings.Repeat("portfolio context and a question about positions ", 4)
	for i := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&head, `,{"role":"%s","content":"%d: %s"}`, role, i, line)
	}
	pad := ""
	if msgs == 0 {
		pad = strings.Repeat("x", 1024-160)
	}
	return mediatedTurn{prefix: head.String() + `,{"role":"user","content":"` + pad + ` what is ABC at, turn `}
}

// request is the runner's request of turn n for model.
func (m mediatedTurn) request(model string, n int) []byte {
	return []byte(`{"model":"` + model + `",` + m.prefix + strconv.Itoa(n) + `?"}]}`)
}

// rounds are the model requests of turn n as cllama sends them upstream:
// the runner's messages and the managed tool, then the hidden round too.
func (m mediatedTurn) rounds(n int) (first, second []byte) {
	msgs := `{"model":"gpt-fake",` + m.prefix + strconv.Itoa(n) + `?"}`
	tools := `],"tools":[` + floorToolDef + `]}`
	return []byte(msgs + tools), []byte(msgs + floorHidden + tools)
}

// BenchmarkFloorMediated measures a mediated turn at c=1 beside the
// direct path and the floor, and records its rows in the summary.
func BenchmarkFloorMediated(b *testing.B) {
	cases := []struct {
		name string
		msgs int
	}{
		{"mediated 1 KB c=1", 0},
		{"mediated 200 msgs c=1", 200},
	}
	provider, svc := startFloorServices(b)
	toolCall := []byte(`{"q":"ABC"}`)
	for _, tc := range cases {
		b.Run(strings.ReplaceAll(tc.name, " ", "_"), func(b *testing.B) {
			rig := newMediatedRig(b, provider, svc, b.TempDir())
			floorModel, floorTool := newFloor(b, provider), newFloor(b, svc)
			shape := newMediatedTurn(tc.msgs)
			turn := 0
			// run times b.N turns of one path: the median latency of a
			// turn and the process CPU per turn.
			run := func(do func(n int) time.Duration) (p50, cpu float64) {
				for range 20 {
					turn++
					do(turn)
				}
				lat := make([]time.Duration, 0, b.N)
				cpu0 := cpuTime()
				for range b.N {
					turn++
					lat = append(lat, do(turn))
				}
				return float64(percentile(lat, 0.5).Microseconds()), float64((cpuTime() - cpu0).Microseconds()) / float64(len(lat))
			}
			// The runner makes the turn's three calls itself, to model
			// and tool (straight, or through the floor).
			itself := func(model, tool string) func(int) time.Duration {
				return func(n int) time.Duration {
					first, second := shape.rounds(n)
					return rig.do(b, model+"/v1/chat/completions", first) + rig.do(b, tool+"/lookup", toolCall) +
						rig.do(b, model+"/v1/chat/completions", second)
				}
			}
			b.ResetTimer()
			_, d1CPU := run(func(n int) time.Duration {
				return rig.do(b, provider+"/v1/chat/completions", shape.request("gpt-fake", n))
			})
			d3Lat, d3CPU := run(itself(provider, svc))
			f3Lat, f3CPU := run(itself(floorModel, floorTool))
			pLat, pCPU := run(func(n int) time.Duration { return rig.do(b, rig.proxy+pathChat, shape.request("fake/gpt-fake", n)) })
			b.StopTimer()
			name := tc.name
			recordFloor(floorRow{figure: name + ": p50", unit: "µs", direct: d3Lat, floor: f3Lat, cllama: pLat,
				addedFloor: f3Lat - d3Lat, addedProxy: pLat - d3Lat})
			cpu := floorRow{figure: name + ": CPU/turn", unit: "µs", direct: d1CPU, floor: d1CPU + f3CPU - d3CPU, cllama: pCPU,
				addedFloor: f3CPU - d3CPU, addedProxy: pCPU - d1CPU}
			recordFloor(cpu)
			b.ReportMetric(cpu.addedProxy, "cllama-cpu-µs/turn")
			b.ReportMetric(cpu.addedFloor, "floor-cpu-µs/turn")
		})
	}
}
