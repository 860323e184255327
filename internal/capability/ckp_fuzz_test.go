package capability

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// FuzzParseToolManifests: any input either fails cleanly or yields
// manifests that hold every rule of spec 001 the compiler relies on.
func FuzzParseToolManifests(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "ckp", "*"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil && !strings.HasSuffix(p, ".golden.json") {
			f.Add(data)
		}
	}
	f.Add([]byte(okSpec))
	f.Add([]byte(`{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "mcp://x"}}}`))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("[{\"claw\":\"0.3.0\",\"kind\":\"Tool\",\"metadata\":{\"name\":\"x\"},\"spec\":{\"mcp_source\":{\"uri\":\"https://h/\"}}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ParseToolManifests(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(ms) == 0 {
			t.Fatal("no error and no manifests")
		}
		seen := map[string]bool{}
		for _, m := range ms {
			tl := m.Tool
			if !manifest.ValidToolName(tl.Name) || seen[tl.Name] {
				t.Fatalf("bad or duplicate name %q", tl.Name)
			}
			seen[tl.Name] = true
			if m.Source == nil && (strings.TrimSpace(tl.Description) == "" || len(tl.InputSchema) == 0) {
				t.Fatalf("%q: no mcp_source, yet description or input_schema is missing", tl.Name)
			}
			if len(tl.InputSchema) > 0 {
				if err := checkSchema(tl.InputSchema, true); err != nil {
					t.Fatalf("%q: accepted input_schema does not compile: %v", tl.Name, err)
				}
			}
			if m.Source != nil {
				if isMCPScheme(m.Source.URI) {
					t.Fatalf("accepted reserved URI %q", m.Source.URI)
				}
				switch m.Source.Scheme {
				case SourceStdio:
					if !strings.HasPrefix(m.Source.Command, "/") || tl.Endpoint != nil {
						t.Fatalf("stdio source %+v endpoint %+v", m.Source, tl.Endpoint)
					}
				case SourceHTTPS:
					if tl.Endpoint == nil || !strings.HasPrefix(tl.Endpoint.BaseURL, "https://") || !strings.HasPrefix(tl.Endpoint.Path, "/") {
						t.Fatalf("https source without a usable endpoint: %+v", tl.Endpoint)
					}
				default:
					t.Fatalf("source scheme %q", m.Source.Scheme)
				}
			}
			if tl.TimeoutMS < 0 || (tl.Retry != nil && (tl.Retry.MaxAttempts < 1 || tl.Retry.MaxAttempts > 10)) {
				t.Fatalf("%q: timeout %d retry %+v", tl.Name, tl.TimeoutMS, tl.Retry)
			}
		}
	})
}
