package feeds

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/recorder"
)

// benchRequest is an OpenAI or Anthropic request with a system prompt and
// turns of about 1 KiB each (6 turns: about 6 KiB).
func benchRequest(f exchange.Format, turns int) []byte {
	turn := strings.Repeat("lorem ipsum dolor sit amet ", 40)
	var b strings.Builder
	if f == formatOpenAI {
		b.WriteString(`{"model":"openai/gpt-4o","stream":true,"messages":[{"role":"system","content":"You are Tiverton, a trading agent."}`)
	} else {
		b.WriteString(`{"model":"anthropic/claude-sonnet-4","max_tokens":1024,"system":[{"type":"text","text":"You are Tiverton, a trading agent.","cache_control":{"type":"ephemeral"}}],"messages":[`)
	}
	for i := range turns {
		role := []string{"user", "assistant"}[i%2]
		if i > 0 || f == formatOpenAI {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":%q,"content":%q}`, role, turn)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// benchFeeds serves three feeds of about 1 KiB each (markdown, JSON, text).
func benchFeeds(b *testing.B, ttl int) []manifest.Feed {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/market":
			w.Header().Set("Content-Type", "text/markdown")
			_, _ = io.WriteString(w, "---\nrefreshed: 2026-03-19T14:32:00Z\n---\n# Market\n"+strings.Repeat("- SPY 512.30 +0.4%\n", 50))
		case "/portfolio":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"positions":[`+strings.Repeat(`{"sym":"SPY","qty":10},`, 45)+`{"sym":"QQQ","qty":1}]}`)
		default:
			_, _ = io.WriteString(w, strings.Repeat("Fleet nominal. ", 70))
		}
	}))
	b.Cleanup(srv.Close)
	return []manifest.Feed{
		{Name: "market", Source: "trading-api", URL: srv.URL + "/market", TTL: ttl},
		{Name: "portfolio", Source: "trading-api", URL: srv.URL + "/portfolio", TTL: ttl},
		{Name: "alerts", Source: "claw-api", URL: srv.URL + "/alerts", TTL: ttl},
	}
}

func benchDecorate(b *testing.B, f exchange.Format, ttl, turns int) {
	agent := &agentctx.Agent{ID: "tiverton", Feeds: benchFeeds(b, ttl)}
	d := New(Options{Recorder: recorder.New(audit.New(io.Discard), nil)})
	body := benchRequest(f, turns)
	x := &exchange.Exchange{ID: "r", Agent: agent, Pod: "trading-desk", Format: f}
	x.Body = body
	if err := d.Decorate(b.Context(), x); err != nil || len(x.Body) == len(body) {
		b.Fatalf("warm-up: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		x.Body = body
		_ = d.Decorate(b.Context(), x)
	}
}

// Added latency per request with three feeds served from the cache.
func BenchmarkDecorateCached3(b *testing.B) {
	for _, f := range testFormats {
		b.Run(string(f), func(b *testing.B) { benchDecorate(b, f, 3600, 6) })
	}
}

// The same with a long conversation (100 turns, about 100 KiB): the cost
// that grows with the body is one validation pass and one scan.
func BenchmarkDecorateCached3LongConversation(b *testing.B) {
	for _, f := range testFormats {
		b.Run(string(f), func(b *testing.B) { benchDecorate(b, f, 3600, 100) })
	}
}

// Added latency per request with three cold feeds (TTL 0: every request
// fetches all three, concurrently) from a local httptest server.
func BenchmarkDecorateCold3(b *testing.B) {
	for _, f := range testFormats {
		b.Run(string(f), func(b *testing.B) { benchDecorate(b, f, 0, 6) })
	}
}
