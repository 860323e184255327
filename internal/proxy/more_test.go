package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/formats"
)

// TestUpstreamConnectionsPooled checks that concurrent exchanges reuse
// upstream connections instead of dialling per request (Go's default keeps
// only two idle connections per host).
func TestUpstreamConnectionsPooled(t *testing.T) {
	p := newPod(t)
	const workers, rounds = 16, 8
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				req, _ := http.NewRequest(http.MethodPost, p.front.URL+pathChat, strings.NewReader(requestBody(formatOpenAI, "fake", false)))
				req.Header.Set("Authorization", "Bearer "+aliceToken)
				resp, err := p.front.Client().Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	conns := map[string]bool{}
	for _, r := range p.up.requests() {
		conns[r.Remote] = true
	}
	// Without pooling every exchange dials (128 connections). With it,
	// about one per runner; a few more are allowed: a request waiting for
	// a connection starts a dial, and when an idle one frees up first the
	// transport uses that and keeps the dialled one for later.
	if n := len(conns); n > 2*workers {
		t.Fatalf("%d upstream connections for %d concurrent runners (%d exchanges): not pooled", n, workers, workers*rounds)
	}
	// Every exchange is a whole history line, in one of alice's files
	// (concurrent exchanges may be spread over several on a machine of
	// many cores: CLLAMA_HISTORY_FILES).
	entries, files, err := history.ReadAgent(p.historyDir, "alice")
	malformed := 0
	for _, f := range files {
		malformed += f.Malformed
	}
	if err != nil || len(entries) != workers*rounds || malformed != 0 {
		t.Fatalf("%d entries, %+v, %v", len(entries), files, err)
	}
}

func TestChunkedBodyTooLarge(t *testing.T) {
	p := newPod(t, func(c *Config, _ *Options) { c.MaxBodyBytes = 100 })
	body := io.MultiReader(strings.NewReader(`{"model":"fake/m","x":"`), strings.NewReader(strings.Repeat("a", 500)), strings.NewReader(`"}`))
	req, _ := http.NewRequest(http.MethodPost, p.front.URL+pathMessages, body)
	req.Header.Set("X-Api-Key", aliceToken)
	resp, err := p.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := readAll(t, resp.Body)
	if typ, _ := apiErr(t, formatAnthropic, b); resp.StatusCode != 413 || typ != "request_too_large" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func TestMalformedMetadataRefusedAndReported(t *testing.T) {
	p := newPod(t)
	writeFile(t, filepath.Join(p.root, "alice", "metadata.json"), `{"token":"bob:x"}`)
	resp := p.post(t, pathChat, requestBody(formatOpenAI, "fake", false))
	if resp.StatusCode != 403 {
		t.Fatal(resp.StatusCode)
	}
	e := p.audit.waitEvent(t, audit.TypeManifestError)
	if e.ClawID != "alice" || !strings.Contains(e.Error, "metadata.json") {
		t.Fatalf("%+v", e)
	}
}

func TestCopyResponseHeaders(t *testing.T) {
	in := http.Header{
		"Connection":        {"keep-alive, X-Hop"},
		"X-Hop":             {"1"},
		"Keep-Alive":        {"timeout=5"},
		"Transfer-Encoding": {"chunked"},
		"Set-Cookie":        {"a=b"},
		"Content-Length":    {"5"},
		"Content-Type":      {"application/json"},
		"Retry-After":       {"3"},
		"X-Ratelimit-Limit": {"100"},
	}
	out := http.Header{}
	copyResponseHeaders(out, in)
	if len(out) != 3 || out.Get("Content-Type") == "" || out.Get("Retry-After") != "3" || out.Get("X-Ratelimit-Limit") != "100" {
		t.Fatalf("%v", out)
	}
}

func TestCopyRequestHeadersAllowlist(t *testing.T) {
	in := http.Header{
		"Authorization":       {"Bearer a:b"},
		"X-Api-Key":           {"a:b"},
		"Api-Key":             {"a:b"},
		"Cookie":              {"s=1"},
		"Openai-Organization": {"org"},
		"Openai-Project":      {"proj"},
		"Anthropic-Version":   {"2023-06-01"},
		"Anthropic-Beta":      {"x"},
		"X-Stainless-Lang":    {"go"},
		"Connection":          {"close"},
		"Accept":              {"text/event-stream"},
	}
	out := http.Header{}
	copyRequestHeaders(out, in, forwardedHeaders(formats.All()))
	want := []string{"Accept", "Anthropic-Beta", "Anthropic-Version", "X-Stainless-Lang"}
	if len(out) != len(want) {
		t.Fatalf("%v", out)
	}
	for _, k := range want {
		if out.Get(k) == "" {
			t.Errorf("%s not forwarded", k)
		}
	}
}

// FuzzAssemblers feeds arbitrary event data to both stream assemblers:
// they must never panic, and what they produce must be JSON.
func FuzzAssemblers(f *testing.F) {
	for _, d := range openAIStream {
		f.Add("", []byte(d))
	}
	for _, e := range anthropicStream {
		f.Add(e[0], []byte(e[1]))
	}
	f.Add("", []byte(`{"choices":[{"index":-5,"delta":{"tool_calls":[{"index":99999}]}}]}`))
	f.Add("", []byte(`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{"}}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if len(data) == 0 {
			return
		}
		for _, fm := range testFormats {
			a := wireFormat(t, fm).(wire.StreamAssembling).NewAssembler()
			a.Observe(name, data)
			a.Observe(name, data)
			out, _ := a.Result()
			if out != nil && !jsonValid(out) {
				t.Fatalf("%s assembler produced invalid JSON %q", fm, out)
			}
		}
	})
}

func jsonValid(b []byte) bool {
	var v any
	return json.Unmarshal(b, &v) == nil
}

// Spans name the route a path matched, taken from the formats' object
// routes; an object's id never becomes a span name.
func TestSpanRouteNamesObjectRoutes(t *testing.T) {
	_, routes, err := storedFormats(formats.All())
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{objectRoutes: routes}
	for path, want := range map[string]string{
		"/v1/responses/resp_1":             "/v1/responses/{id}",
		"/v1/responses/resp_1/input_items": "/v1/responses/{id}/input_items",
		"/v1/responses/resp_1/cancel":      "/v1/responses/{id}/cancel",
		"/v1/responses/a/b/c/d":            "other",
		"/v1/models/gpt-x":                 "/v1/models/{model}",
		"/mcp":                             "/mcp",
	} {
		if got := s.spanRoute(path); got != want {
			t.Errorf("spanRoute(%q) = %q, want %q", path, got, want)
		}
	}
}
