package capability

import (
	"testing"
)

// FuzzParseDescriptor: any input either fails cleanly or yields a
// descriptor that holds every invariant the compiler relies on.
func FuzzParseDescriptor(f *testing.F) {
	f.Add([]byte(tradingV2))
	f.Add([]byte(`{"version":2,"mcp":{},"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`))
	f.Add([]byte(`{"feeds":[{"name":"x","path":"/x","ttl":1}],"skill":"s.md","auth":{"env":"T"}}`))
	f.Add([]byte(`{"version":2,"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"a":{"$ref":"#/x"}}},"http":{"method":"GET","path":"/{a}"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDescriptor(data)
		if err != nil {
			return
		}
		checkInvariants(t, d)
	})
}

// FuzzParseToolsSnapshot is the same for MCP tools/list snapshots.
func FuzzParseToolsSnapshot(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`))
	f.Add([]byte(`[{"name":"a","description":"d","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseToolsSnapshot(data)
		if err != nil {
			return
		}
		checkInvariants(t, d)
	})
}

// FuzzPresentedName: every alias is provider-valid.
func FuzzPresentedName(f *testing.F) {
	f.Add("trading-api.get_market_context")
	f.Fuzz(func(t *testing.T, s string) {
		if p := PresentedName(s); !ValidPresentedName(p) {
			t.Fatalf("PresentedName(%q) = %q is not a valid alias", s, p)
		}
	})
}

func checkInvariants(t *testing.T, d *Descriptor) {
	t.Helper()
	if d.Version != 1 && d.Version != 2 {
		t.Fatalf("version %d", d.Version)
	}
	names := map[string]bool{}
	for _, tool := range d.Tools {
		if names[tool.Name] {
			t.Fatalf("duplicate tool %q", tool.Name)
		}
		names[tool.Name] = true
		if len(tool.InputSchema) == 0 {
			t.Fatalf("tool %q without schema", tool.Name)
		}
		if tool.HTTP == nil && d.MCP == nil {
			t.Fatalf("tool %q has no execution", tool.Name)
		}
		if tool.HTTP != nil && (tool.HTTP.Path == "" || tool.HTTP.Path[0] != '/') {
			t.Fatalf("tool %q path %q", tool.Name, tool.HTTP.Path)
		}
	}
	feeds := map[string]bool{}
	for _, f := range d.Feeds {
		if feeds[f.Name] || f.Path == "" || f.Path[0] != '/' || f.TTL < 0 {
			t.Fatalf("bad feed %+v", f)
		}
		feeds[f.Name] = true
	}
}
