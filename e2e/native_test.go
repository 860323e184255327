package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
)

// checkNative checks the scout, whose tools are granted in native mode:
// its runner (an MCP client) called them itself on cllama's /mcp, they
// reached the service with the projected bearer, and audit and history
// record them with mode native. Then an independent MCP client, the
// official SDK's, holding the scout's token, sees exactly the scout's
// grant on /mcp and cannot call an ungranted tool.
func checkNative(t *testing.T, p *pod, s runnerSummary, desk received, events []audit.Event) {
	var mcpCalls []string
	for _, turn := range s.Turns {
		mcpCalls = append(mcpCalls, turn.MCPCalls...)
	}
	for _, tool := range []string{"trading-api.get_market_context", "market-data.lookup_symbol"} {
		if !slices.Contains(mcpCalls, tool) {
			t.Errorf("the scout's runner did not call %s over MCP: %+v", tool, s.Turns)
		}
		if !slices.ContainsFunc(events, func(e audit.Event) bool {
			return e.Type == audit.TypeToolCall && e.ClawID == "scout" && e.Tool == tool && e.Status == "ok" && e.Mode == "native" && e.Format == "mcp"
		}) {
			t.Errorf("no ok native tool_call event for the scout's %s", tool)
		}
	}
	if !slices.ContainsFunc(desk.Received, func(r receivedRequest) bool {
		return r.ClawID == "scout" && r.Authorized && r.Path == "/api/v1/market_context/scout"
	}) {
		t.Errorf("trading-api never received the scout's market-context call with the projected bearer: %+v", desk.Received)
	}
	entries, _, err := history.ReadAgent(filepath.Join(p.dir, ".claw-runtime", "history"), "scout")
	if err != nil {
		t.Fatalf("scout history: %v", err)
	}
	native := 0
	for _, e := range entries {
		if e.Format == history.FormatMCP && len(e.ToolTrace) == 1 && e.ToolTrace[0].ToolCalls[0].Mode == "native" {
			native++
		}
	}
	if native < 2 {
		t.Errorf("scout history has %d native call entries, want 2 or more", native)
	}

	// An independent MCP client with the scout's token, from outside.
	var md struct {
		Token string `json:"token"`
	}
	raw, err := os.ReadFile(filepath.Join(p.dir, ".claw-runtime", "context", "scout", "metadata.json"))
	if err != nil || json.Unmarshal(raw, &md) != nil || md.Token == "" {
		t.Fatalf("scout's token: %v", err)
	}
	ips := strings.Fields(run(t, "", time.Minute, "docker", "inspect", "-f",
		"{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", p.container("cllama")))
	if len(ips) == 0 {
		t.Fatal("cllama has no address")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	// cllama is on every agent's network; from the host, an address on
	// one of them may be shadowed by a route of the host's own, so each
	// is tried in turn.
	var cs *mcp.ClientSession
	var errs []string
	for _, ip := range ips {
		cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint:   fmt.Sprintf("http://%s:8080/mcp", ip),
			HTTPClient: &http.Client{Transport: bearerTransport{md.Token}},
			MaxRetries: -1,
		}, nil)
		if err == nil {
			break
		}
		errs = append(errs, ip+": "+err.Error())
	}
	if cs == nil {
		t.Fatalf("connecting to cllama's /mcp as the scout: %s", strings.Join(errs, "; "))
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	// Its grant, and the built-in reader of results kept behind a handle
	// (every native tool's result is capped).
	if want := []string{"claw__read_result", "market-data__lookup_symbol", "trading-api__get_market_context"}; !slices.Equal(names, want) {
		t.Errorf("/mcp lists %v for the scout, want exactly its grant and claw.read_result %v", names, want)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trading-api.execute_trade", Arguments: map[string]any{"symbol": "NVDA", "side": "buy", "quantity": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "unknown_tool") {
		t.Errorf("an ungranted tool was callable on /mcp: %+v", res)
	}
	var after received
	p.getJSON("trading-api", 4000, "/api/v1/received", &after)
	for _, r := range after.Received {
		if r.ClawID == "scout" && r.Method == "POST" {
			t.Errorf("the scout reached %s %s", r.Method, r.Path)
		}
	}
}

// bearerTransport sends Authorization: Bearer token.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return bearerBase.RoundTrip(r)
}

// bearerBase bounds connecting, not the event stream a session holds open.
var bearerBase = &http.Transport{DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
