package feeds

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/anthropic"
	"github.com/clawdapus/clawgo/internal/wire/openai"
)

// The two formats the tests speak.
const (
	formatOpenAI    exchange.Format = openai.Name
	formatAnthropic exchange.Format = anthropic.Name
)

var testFormats = []exchange.Format{formatOpenAI, formatAnthropic}

// injectorOf is the feed injector of the registered format f.
func injectorOf(f exchange.Format) wire.FeedInjector {
	inj, err := injectorFor(f)
	if err != nil {
		panic(err)
	}
	return inj
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 19, 14, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// feedService is a real HTTP feed service: each path answers with its
// handler, and every request is recorded.
type feedService struct {
	*httptest.Server
	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	reqs     []*http.Request
	hits     map[string]int
}

func newFeedService(t *testing.T) *feedService {
	t.Helper()
	s := &feedService{handlers: map[string]http.HandlerFunc{}, hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.hits[r.URL.Path]++
		h := s.handlers[r.URL.Path]
		s.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// handle sets the handler of path.
func (s *feedService) handle(path string, h http.HandlerFunc) {
	s.mu.Lock()
	s.handlers[path] = h
	s.mu.Unlock()
}

// text makes path answer with a fixed body and content type.
func (s *feedService) text(path, ctype, body string) {
	s.handle(path, func(w http.ResponseWriter, r *http.Request) {
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		_, _ = w.Write([]byte(body))
	})
}

func (s *feedService) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *feedService) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

func (s *feedService) feed(name, path string, ttl int) manifest.Feed {
	return manifest.Feed{Name: name, Source: "svc", Path: path, TTL: ttl, URL: s.URL + path}
}

// auditLog collects audit events.
type auditLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *auditLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *auditLog) events(t *testing.T) []audit.Event {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []audit.Event
	for line := range strings.Lines(l.buf.String()) {
		var e audit.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// requestBody is a small runner request of each format, with a system
// prompt and an unknown field that must survive.
func requestBody(f exchange.Format) []byte {
	if f == formatOpenAI {
		return []byte(`{"model":"openai/gpt-4o","messages":[{"role":"system","content":"You are Tiverton."},{"role":"user","content":"hi"}],"stream":true,"x_unknown":{"keep":[1,2]}}`)
	}
	return []byte(`{"model":"anthropic/claude-sonnet-4","system":"You are Tiverton.","messages":[{"role":"user","content":"hi"}],"max_tokens":64,"stream":true,"x_unknown":{"keep":[1,2]}}`)
}

func newExchange(f exchange.Format, agent *agentctx.Agent) *exchange.Exchange {
	b := requestBody(f)
	return &exchange.Exchange{ID: "req-1", Agent: agent, Pod: "trading-desk", Format: f, Original: b, Body: b}
}

// decorate runs one request of agent through d and returns the injected feed
// text, checking that the runner's system prompt and other fields survived.
func decorate(t *testing.T, d *Decorator, f exchange.Format, agent *agentctx.Agent) string {
	t.Helper()
	x := newExchange(f, agent)
	if err := d.Decorate(t.Context(), x); err != nil {
		t.Fatalf("Decorate: %v", err)
	}
	return injected(t, f, x.Body)
}

// injected extracts the feed text from a decorated body of a requestBody,
// asserting everything else is unchanged.
func injected(t *testing.T, f exchange.Format, body []byte) string {
	t.Helper()
	var got map[string]json.RawMessage
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("decorated body is not JSON: %v\n%s", err, body)
	}
	var want map[string]json.RawMessage
	_ = json.Unmarshal(requestBody(f), &want)
	key := "messages"
	if f == formatAnthropic {
		key = "system"
	}
	for k, v := range want {
		if k != key && !bytes.Equal(got[k], v) {
			t.Errorf("%s changed: %s -> %s", k, v, got[k])
		}
	}
	if f == formatOpenAI {
		var msgs []struct{ Role, Content string }
		if err := json.Unmarshal(got["messages"], &msgs); err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 3 || msgs[0].Content != "You are Tiverton." || msgs[1].Role != "system" || msgs[2].Content != "hi" {
			t.Fatalf("messages = %+v", msgs)
		}
		return msgs[1].Content
	}
	var sys []struct{ Type, Text string }
	if err := json.Unmarshal(got["system"], &sys); err != nil {
		t.Fatalf("system: %v: %s", err, got["system"])
	}
	if len(sys) != 2 || sys[0].Text != "You are Tiverton." || sys[1].Type != "text" {
		t.Fatalf("system = %+v", sys)
	}
	return sys[1].Text
}

// block returns the block of feed name from the feed text, or fails.
func block(t *testing.T, text, name string) string {
	t.Helper()
	start := strings.Index(text, "--- BEGIN FEED: "+name+" (")
	end := strings.Index(text, "--- END FEED: "+name+" ---")
	if start < 0 || end < start {
		t.Fatalf("no block for %q in:\n%s", name, text)
	}
	return text[start : end+len("--- END FEED: "+name+" ---")]
}

// content returns the lines between a block's BEGIN and END lines.
func content(b string) string {
	_, rest, _ := strings.Cut(b, "\n")
	i := strings.LastIndex(rest, "--- END FEED:")
	return strings.TrimSuffix(rest[:i], "\n")
}
