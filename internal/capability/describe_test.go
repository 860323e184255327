package capability

import (
	"strings"
	"testing"
)

const tradingV2 = `{
  "version": 2,
  "description": "Trading Desk API",
  "tools": [
    {"name": "get_market_context", "description": "Context",
     "inputSchema": {"type": "object", "properties": {"claw_id": {"type": "string"}}, "required": ["claw_id"]},
     "http": {"method": "get", "path": "/api/v1/market_context/{claw_id}"},
     "annotations": {"readOnly": true}},
    {"name": "execute_trade", "description": "Trade",
     "inputSchema": {"type": "object"},
     "http": {"method": "POST", "path": "/api/v1/trades", "body": "json"}}
  ],
  "feeds": [{"name": "market-context", "path": "/api/v1/market_context/{claw_id}", "ttl": 30}],
  "endpoints": [{"method": "GET", "path": "/health"}],
  "skill": "skills/trading-policy.md",
  "auth": {"type": "bearer", "env": "TRADING_API_TOKEN"},
  "discovery": {"anything": "ignored"}
}`

func TestParseDescriptorV2(t *testing.T) {
	d, err := ParseDescriptor([]byte(tradingV2))
	if err != nil {
		t.Fatal(err)
	}
	if d.Version != 2 || len(d.Tools) != 2 || len(d.Feeds) != 1 || len(d.Endpoints) != 1 {
		t.Fatalf("unexpected descriptor: %+v", d)
	}
	tool := d.Tool("get_market_context")
	if tool == nil || tool.HTTP.Method != "GET" || !tool.Annotations.IsReadOnly() {
		t.Fatalf("tool not normalised: %+v", tool)
	}
	if string(d.Tools[1].InputSchema) != `{"type":"object"}` {
		t.Errorf("schema not compacted: %s", d.Tools[1].InputSchema)
	}
	if d.Skill != "skills/trading-policy.md" || d.Auth.Env != "TRADING_API_TOKEN" || !d.HasTools() {
		t.Errorf("skill/auth: %+v", d)
	}
}

// A descriptor tool marks itself parallel-safe in its annotations, as
// parallel_safe or in MCP's camelCase; the two must agree when both are
// written.
func TestParseDescriptorParallelSafe(t *testing.T) {
	doc := func(annotations string) []byte {
		return []byte(`{"version":2,"tools":[{"name":"quote","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/q"},"annotations":` + annotations + `}]}`)
	}
	for _, c := range []struct {
		annotations string
		want        bool
	}{
		{`{"readOnlyHint":true}`, false},
		{`{"parallel_safe":true}`, true},
		{`{"parallelSafe":true}`, true},
		{`{"parallel_safe":true,"parallelSafe":true}`, true},
		{`{"parallel_safe":false}`, false},
	} {
		d, err := ParseDescriptor(doc(c.annotations))
		if err != nil {
			t.Fatalf("%s: %v", c.annotations, err)
		}
		if got := d.Tools[0].Annotations.IsParallelSafe(); got != c.want {
			t.Errorf("%s: parallel-safe %v, want %v", c.annotations, got, c.want)
		}
	}
	_, err := ParseDescriptor(doc(`{"parallel_safe":false,"parallelSafe":true}`))
	if err == nil || !strings.Contains(err.Error(), "tools[0].annotations.parallelSafe") || !strings.Contains(err.Error(), "contradicts parallel_safe") {
		t.Fatalf("disagreeing spellings: %v", err)
	}
	_, err = ParseDescriptor(doc(`{"parallel_safe":"yes"}`))
	if err == nil || !strings.Contains(err.Error(), "parallel_safe") {
		t.Fatalf("a string parallel_safe: %v", err)
	}
}

func TestParseDescriptorV1(t *testing.T) {
	d, err := ParseDescriptor([]byte(`{"feeds":[{"name":"alerts","path":"/alerts"}],"endpoints":[{"path":"/x"}],"skill":{"path":"s.md"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Version != 1 || d.Feeds[0].TTL != DefaultFeedTTL || d.Endpoints[0].Method != "GET" || d.Skill != "s.md" || d.HasTools() {
		t.Fatalf("unexpected: %+v", d)
	}
}

func TestParseDescriptorMCP(t *testing.T) {
	d, err := ParseDescriptor([]byte(`{"version":2,"mcp":{"transport":"streamable_http"},"tools":[{"name":"search","inputSchema":{"type":"object"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.MCP.Path != DefaultMCPPath || d.Tools[0].HTTP != nil {
		t.Fatalf("unexpected: %+v", d.MCP)
	}
}

func TestParseDescriptorErrors(t *testing.T) {
	tool := func(extra string) string {
		return `{"version":2,"tools":[{"name":"t","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/t"}` + extra + `}]}`
	}
	for _, tc := range []struct{ name, in, want string }{
		{"not json", `{`, "not a valid JSON"},
		{"array", `[]`, "not a valid JSON"},
		{"trailing", `{} {}`, "trailing data"},
		{"version", `{"version":3}`, "version: unsupported value 3"},
		{"tools in v1", `{"version":1,"tools":[{"name":"t"}]}`, "needs descriptor version 2"},
		{"mcp in v1", `{"mcp":{}}`, "needs descriptor version 2"},
		{"no name", `{"version":2,"tools":[{"inputSchema":{"type":"object"},"http":{"method":"GET","path":"/"}}]}`, "tools[0].name: required"},
		{"bad name", `{"version":2,"tools":[{"name":"a b","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/"}}]}`, "tools[0].name"},
		{"dup", `{"version":2,"tools":[` + strings.Repeat(`{"name":"t","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/"}},`, 1) + `{"name":"t","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/"}}]}`, "duplicates tools[0]"},
		{"no schema", `{"version":2,"tools":[{"name":"t","http":{"method":"GET","path":"/"}}]}`, "inputSchema: required"},
		{"schema not object", `{"version":2,"tools":[{"name":"t","inputSchema":[1],"http":{"method":"GET","path":"/"}}]}`, "inputSchema: must be a JSON object"},
		{"schema type", `{"version":2,"tools":[{"name":"t","inputSchema":{"type":"array"},"http":{"method":"GET","path":"/"}}]}`, `"type" must be "object"`},
		{"schema invalid", `{"version":2,"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":7}}},"http":{"method":"GET","path":"/"}}]}`, "not a valid JSON Schema"},
		{"output schema", tool(`,"outputSchema":"x"`), "outputSchema: must be a JSON object"},
		{"no http", `{"version":2,"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`, ".http: required"},
		{"method", `{"version":2,"tools":[{"name":"t","inputSchema":{"type":"object"},"http":{"method":"TRACE","path":"/"}}]}`, "http.method"},
		{"path", `{"version":2,"tools":[{"name":"t","inputSchema":{"type":"object"},"http":{"method":"GET","path":"t"}}]}`, "must start with /"},
		{"placeholder", `{"version":2,"tools":[{"name":"t","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/{a"}}]}`, "unclosed"},
		{"empty placeholder", `{"version":2,"tools":[{"name":"t","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/{}"}}]}`, "empty placeholder"},
		{"body", `{"version":2,"tools":[{"name":"t","inputSchema":{"type":"object"},"http":{"method":"POST","path":"/","body":"form"}}]}`, "http.body"},
		{"timeout", tool(`,"timeout_ms":-1`), "timeout_ms"},
		{"retry", tool(`,"retry":{"max_attempts":0}`), "retry.max_attempts"},
		{"backoff", tool(`,"retry":{"max_attempts":2,"backoff":"random"}`), "retry.backoff"},
		{"feed name", `{"feeds":[{"path":"/a"}]}`, "feeds[0].name: required"},
		{"feed path", `{"feeds":[{"name":"a","path":"a"}]}`, "must start with /"},
		{"feed ttl", `{"feeds":[{"name":"a","path":"/a","ttl":-1}]}`, "ttl: must be >= 0"},
		{"feed dup", `{"feeds":[{"name":"a","path":"/a"},{"name":"a","path":"/b"}]}`, "duplicates feeds[0]"},
		{"endpoint path", `{"endpoints":[{"path":"x"}]}`, "endpoints[0].path"},
		{"endpoint method", `{"endpoints":[{"method":"FETCH","path":"/x"}]}`, "endpoints[0].method"},
		{"skill escape", `{"skill":"../x.md"}`, "must not leave"},
		{"skill type", `{"skill":7}`, "skill: must be a path"},
		{"auth type", `{"auth":{"type":"basic"}}`, "auth.type"},
		{"auth env", `{"auth":{"type":"bearer"}}`, "auth.env"},
		{"mcp transport", `{"version":2,"mcp":{"transport":"stdio"}}`, "mcp.transport"},
		{"mcp path", `{"version":2,"mcp":{"path":"mcp"}}`, "mcp.path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDescriptor([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseDescriptorTooLarge(t *testing.T) {
	if _, err := ParseDescriptor(make([]byte, MaxDescriptorBytes+1)); err == nil {
		t.Fatal("accepted an oversized descriptor")
	}
}

func TestParseToolsSnapshot(t *testing.T) {
	for name, in := range map[string]string{
		"result":  `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`,
		"array":   `[{"name":"echo","inputSchema":{"type":"object"}}]`,
		"jsonrpc": `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			d, err := ParseToolsSnapshot([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			if d.Version != 2 || d.MCP == nil || d.MCP.Path != "/mcp" || len(d.Tools) != 1 || d.Tools[0].HTTP != nil {
				t.Fatalf("unexpected: %+v", d)
			}
		})
	}
	for _, in := range []string{`{}`, `{"tools":[{"name":"x"}]}`, `[{"name":"a","inputSchema":{}},{"name":"a","inputSchema":{}}]`, `nope`} {
		if _, err := ParseToolsSnapshot([]byte(in)); err == nil {
			t.Errorf("accepted %s", in)
		}
	}
}

// A descriptor that is not valid JSON is reported at its line and column.
func TestDescriptorJSONErrorPosition(t *testing.T) {
	_, err := ParseDescriptor([]byte("{\n  \"version\": 2,\n  \"tools\": [\n    {\"name\": \"a\",}\n  ]\n}"))
	if err == nil || !strings.Contains(err.Error(), "line 4, column 19") {
		t.Fatalf("%v", err)
	}
	_, err = ParseDescriptor([]byte("{\n  \"version\": \"two\"\n}"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("type error: %v", err)
	}
	_, err = ParseToolsSnapshot([]byte("\n\n[{\"name\": }]"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("snapshot: %v", err)
	}
}
