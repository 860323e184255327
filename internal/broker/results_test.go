package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/resultstore"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// reportAgent is agent id with one native tool, svc.report, at base.
func reportAgent(id, base string) *agentctx.Agent {
	t := &manifest.Tools{Version: 1, Policy: manifest.DefaultPolicy(), Tools: []manifest.Tool{{Name: "svc.report", Mode: manifest.ModeNative,
		InputSchema: json.RawMessage(`{"type":"object"}`), Execution: manifest.Execution{Transport: "http", Service: "svc", BaseURL: base, Method: "GET", Path: "/report"}}}}
	a := &agentctx.Agent{ID: id}
	a.SetTools(t)
	return a
}

func connect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: authed{}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func envelopeOf(t *testing.T, res *mcp.CallToolResult) toolexec.Envelope {
	t.Helper()
	var env toolexec.Envelope
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// On /mcp a 5 MB native result comes back as a head, a handle and a
// resource_link claw-result://<handle> with its size; claw.read_result,
// listed beside the agent's tools, pages and searches it on the session
// that produced it; another session and another agent get unknown_handle.
func TestKeptResultOnMCP(t *testing.T) {
	var body bytes.Buffer
	for i := 0; body.Len() < 5<<20; i++ {
		if i == 70000 {
			body.WriteString("NEEDLE in the report\n")
			continue
		}
		fmt.Fprintf(&body, "%07d a line of the daily report\n", i)
	}
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(body.Bytes())
	}))
	defer svc.Close()
	store, err := resultstore.OpenLocal(resultstore.LocalOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ex := toolexec.New(toolexec.Options{})
	defer ex.Close()
	var events bytes.Buffer
	b := New(Options{Runner: ex, Results: store, Recorder: recorder.New(audit.New(&events), nil)})
	defer b.Close()
	alice, bob := reportAgent("alice", svc.URL), reportAgent("bob", svc.URL)
	serve := func(a *agentctx.Agent) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.ServeAgent(w, r, a) }))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	aliceURL := serve(alice)
	cs := connect(t, aliceURL)
	l, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range l.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "claw__read_result,svc__report" && strings.Join(names, ",") != "svc__report,claw__read_result" {
		t.Fatalf("tools/list: %v, want svc__report and claw__read_result", names)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "svc__report", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	env := envelopeOf(t, res)
	if !env.Truncated || env.OriginalBytes != body.Len() || env.ResultHandle == "" || len(res.Content[0].(*mcp.TextContent).Text) > manifest.DefaultMaxToolResultBytes {
		t.Fatalf("envelope: truncated %v original_bytes %d handle %q", env.Truncated, env.OriginalBytes, env.ResultHandle)
	}
	if len(res.Content) != 2 {
		t.Fatalf("%d content blocks, want the envelope and a resource_link", len(res.Content))
	}
	link, ok := res.Content[1].(*mcp.ResourceLink)
	if !ok || link.URI != "claw-result://"+env.ResultHandle || link.Size == nil || *link.Size != int64(body.Len()) {
		t.Fatalf("resource_link: %+v", res.Content[1])
	}
	read := func(cs *mcp.ClientSession, args map[string]any) toolexec.Envelope {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "claw__read_result", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return envelopeOf(t, res)
	}
	page := read(cs, map[string]any{"handle": env.ResultHandle, "offset": 4000000, "length": 3000})
	var r struct{ Text string }
	if err := json.Unmarshal(page.Data, &r); err != nil || r.Text != string(body.Bytes()[4000000:4003000]) {
		t.Fatalf("range read: %+v", page)
	}
	found := read(cs, map[string]any{"handle": env.ResultHandle, "grep": "NEEDLE"})
	at := bytes.Index(body.Bytes(), []byte("NEEDLE"))
	if !found.OK || !strings.Contains(string(found.Data), fmt.Sprintf(`{"offset":%d,"text":"NEEDLE in the report"}`, at)) {
		t.Fatalf("search: %s", found.Data)
	}
	// Another session of alice's, and bob, hold nothing under it.
	for _, other := range []*mcp.ClientSession{connect(t, aliceURL), connect(t, serve(bob))} {
		if e := read(other, map[string]any{"handle": env.ResultHandle}); e.OK || e.Error.Code != "unknown_handle" {
			t.Fatalf("read from another session or agent: %+v", e)
		}
	}
	var stored, reads int
	for _, line := range strings.Split(strings.TrimSpace(events.String()), "\n") {
		var e audit.Event
		_ = json.Unmarshal([]byte(line), &e)
		switch e.Type {
		case audit.TypeResultStored:
			stored++
		case audit.TypeResultRead:
			reads++
			if e.ClawID != "alice" || e.Handle != env.ResultHandle {
				t.Errorf("result_read %+v", e)
			}
		}
	}
	if stored != 1 || reads != 2 {
		t.Fatalf("%d result_stored, %d result_read events; want 1 and 2", stored, reads)
	}
}
