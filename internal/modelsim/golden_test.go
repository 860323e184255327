package modelsim

import (
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

const goldenScript = `
rules:
  - name: both
    reply:
      text: "Checking the price of ACME for you now."
      tool_calls:
        - {name: market.lookup_symbol, arguments: {symbol: ACME, fields: [price, name]}}
      usage: {input_tokens: 30, output_tokens: 12}
`

// TestWireGolden pins the exact bytes of each response shape, so a change
// to ids, field order or stream framing is a visible diff. Refresh with
// go test ./internal/modelsim -run WireGolden -update.
func TestWireGolden(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"openai-plain", "/v1/chat/completions", `{"model":"gpt-x","messages":[{"role":"user","content":"price?"}],"tools":[{"type":"function","function":{"name":"market__lookup_symbol"}}]}`},
		{"openai-stream", "/v1/chat/completions", `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"price?"}],"tools":[{"type":"function","function":{"name":"market__lookup_symbol"}}]}`},
		{"anthropic-plain", "/v1/messages", `{"model":"claude-x","max_tokens":100,"messages":[{"role":"user","content":"price?"}],"tools":[{"name":"market__lookup_symbol","input_schema":{"type":"object"}}]}`},
		{"anthropic-stream", "/v1/messages", `{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"price?"}],"tools":[{"name":"market__lookup_symbol","input_schema":{"type":"object"}}]}`},
		{"responses-plain", "/v1/responses", `{"model":"gpt-x","input":"price?","tools":[{"type":"function","name":"market__lookup_symbol","parameters":{"type":"object"},"strict":false}],"reasoning":{"effort":"low"},"include":["reasoning.encrypted_content"]}`},
		{"responses-stream", "/v1/responses", `{"model":"gpt-x","stream":true,"store":false,"instructions":"Be brief.","input":[{"role":"user","content":"price?"}],"tools":[{"type":"function","name":"market__lookup_symbol","parameters":{"type":"object"},"strict":false}],"reasoning":{"effort":"low"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseScript([]byte(goldenScript))
			if err != nil {
				t.Fatal(err)
			}
			srv, err := NewServer(Options{Script: sc, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{h: http.Header{}}
			req, _ := http.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
			srv.ServeHTTP(rec, req)
			got := "content-type: " + rec.h.Get("Content-Type") + "\n\n" + rec.buf.String()
			path := filepath.Join("testdata", "golden", tc.name+".txt")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if got != string(want) {
				t.Fatalf("output differs from %s (run with -update if intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
			}
		})
	}
}
