package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/anthropic"
	"github.com/clawdapus/clawgo/internal/wire/formats"
	"github.com/clawdapus/clawgo/internal/wire/openai"
	"github.com/clawdapus/clawgo/internal/wire/responses"
)

const (
	aliceToken  = "alice:s3cret-alice"
	providerKey = "sk-provider-key"
)

// seen is one request the fake upstream received.
type seen struct {
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	Remote string // the connection's remote address
}

// upstream is a scripted provider. handle answers each request; the
// default answers like a real provider of the called endpoint.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []seen
	handle http.HandlerFunc
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.seen = append(u.seen, seen{r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body, r.RemoteAddr})
		h := u.handle
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if h == nil {
			h = defaultProvider
		}
		h(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) setHandler(h http.HandlerFunc) {
	u.mu.Lock()
	u.handle = h
	u.mu.Unlock()
}

func (u *upstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.seen...)
}

const (
	openAIJSON    = `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":"hello there","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}`
	anthropicJSON = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-fake","content":[{"type":"text","text":"hello there"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":3}}`
)

var openAIStream = []string{
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"gpt-fake","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"gpt-fake","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}`,
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"gpt-fake","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}`,
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"gpt-fake","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"gpt-fake","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}`,
	`[DONE]`,
}

var anthropicStream = [][2]string{
	{"message_start", `{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-fake","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":1}}}`},
	{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
	{"ping", `{"type":"ping"}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":0}`},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`},
	{"message_stop", `{"type":"message_stop"}`},
}

// streamBody renders the canned stream of a format.
func streamBody(f exchange.Format) string {
	var b strings.Builder
	if f == formatAnthropic {
		for _, e := range anthropicStream {
			b.WriteString("event: " + e[0] + "\ndata: " + e[1] + "\n\n")
		}
		return b.String()
	}
	for _, d := range openAIStream {
		b.WriteString("data: " + d + "\n\n")
	}
	return b.String()
}

func formatOf(path string) exchange.Format {
	if strings.HasSuffix(path, "/messages") {
		return formatAnthropic
	}
	return formatOpenAI
}

func defaultProvider(w http.ResponseWriter, r *http.Request) {
	f := formatOf(r.URL.Path)
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	w.Header().Set("Set-Cookie", "provider-session=1")
	w.Header().Set("X-Provider-Request", "up-1")
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, streamBody(f))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if f == formatAnthropic {
		_, _ = io.WriteString(w, anthropicJSON)
	} else {
		_, _ = io.WriteString(w, openAIJSON)
	}
}

// syncBuffer is an io.Writer safe for the audit logger and test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) events(t *testing.T) []audit.Event {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []audit.Event
	for _, ln := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if ln == "" {
			continue
		}
		var e audit.Event
		if err := json.Unmarshal([]byte(ln), &e); err != nil {
			t.Fatalf("audit line %q: %v", ln, err)
		}
		out = append(out, e)
	}
	return out
}

// waitEvent polls for an audit event of typ (events of a finished stream
// are emitted after the client saw the last byte).
func (s *syncBuffer) waitEvent(t *testing.T, typ string) audit.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range s.events(t) {
			if e.Type == typ {
				return e
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s audit event in %v", typ, s.events(t))
	return audit.Event{}
}

// pod is a cllama in front of a fake upstream, with one agent "alice".
type pod struct {
	up         *upstream
	srv        *Server
	front      *httptest.Server
	audit      *syncBuffer
	root       string
	historyDir string
	// history is the session history writer (nil when history is off).
	history *history.Writer
}

// openRecorder is cllama's recorder for cfg (OpenRecorder): audit events
// to w, session history under cfg.HistoryDir, its writer closed when the
// test ends.
func openRecorder(tb testing.TB, cfg Config, w io.Writer) (*recorder.Recorder, *history.Writer) {
	tb.Helper()
	rec, hw, err := OpenRecorder(cfg, audit.New(w), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = hw.Close() })
	return rec, hw
}

type podOption func(*Config, *Options)

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// podProviders is the pod's providers.json; {UP} stands for the fake
// upstream's URL.
const podProviders = `{"providers":{"fake":{"base_url":"{UP}/v1","api_key":"` + providerKey + `","auth":"bearer"},
	"fakeant":{"base_url":"{UP}/v1","api_key":"` + providerKey + `","auth":"x-api-key"}}}`

func newPod(t testing.TB, opts ...podOption) *pod {
	t.Helper()
	return newPodWith(t, podProviders, opts...)
}

// newPodWith is newPod with another providers.json ({UP} is replaced).
func newPodWith(t testing.TB, providers string, opts ...podOption) *pod {
	t.Helper()
	p := &pod{up: newUpstream(t), audit: &syncBuffer{}}
	dir := t.TempDir()
	p.root = filepath.Join(dir, "context")
	p.historyDir = filepath.Join(dir, "history")
	writeFile(t, filepath.Join(p.root, "alice", "metadata.json"), `{"token":"`+aliceToken+`","pod":"test-pod"}`)
	writeFile(t, filepath.Join(dir, "auth", "providers.json"), strings.ReplaceAll(providers, "{UP}", p.up.URL))
	cfg := Config{ContextRoot: p.root, AuthDir: filepath.Join(dir, "auth"), HistoryDir: p.historyDir, Pod: "test-pod"}
	o := Options{AgentCheckInterval: -1}
	for _, f := range opts {
		f(&cfg, &o)
	}
	o.Recorder, p.history = openRecorder(t, cfg, p.audit)
	srv, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	p.srv = srv
	p.front = httptest.NewServer(srv)
	t.Cleanup(p.front.Close)
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// post sends body to path with the given headers (alice's bearer token
// unless headers set Authorization or x-api-key themselves).
func (p *pod) post(t *testing.T, path, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.front.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	custom := false
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
		if k := http.CanonicalHeaderKey(headers[i]); k == "Authorization" || k == "X-Api-Key" {
			custom = true
		}
	}
	if !custom {
		req.Header.Set("Authorization", "Bearer "+aliceToken)
	}
	resp, err := p.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func pathOf(f exchange.Format) string {
	if f == formatAnthropic {
		return pathMessages
	}
	return pathChat
}

// requestBody is a small request of the format for provider prov.
func requestBody(f exchange.Format, prov string, stream bool) string {
	s := "false"
	if stream {
		s = "true"
	}
	if f == formatAnthropic {
		return `{"model":"` + prov + `/claude-fake","max_tokens":64,"stream":` + s + `,"messages":[{"role":"user","content":"hi"}]}`
	}
	if stream {
		// The fake provider's streams end with the usage chunk, which
		// the runner gets when it asks (cllama asks for a runner that
		// does not, and takes it out again).
		return `{"model":"` + prov + `/gpt-fake","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	}
	return `{"model":"` + prov + `/gpt-fake","stream":` + s + `,"messages":[{"role":"user","content":"hi"}]}`
}

// The two formats the tests speak.
const (
	formatOpenAI    exchange.Format = openai.Name
	formatAnthropic exchange.Format = anthropic.Name
	formatResponses exchange.Format = responses.Name
)

var testFormats = []exchange.Format{formatOpenAI, formatAnthropic}

// The routes of the formats, as runners call them.
var (
	pathChat      = openai.New().Endpoint().Route
	pathMessages  = anthropic.New().Endpoint().Route
	pathResponses = responses.New().Endpoint().Route
)

// wireFormat is the registered format named f.
func wireFormat(t testing.TB, f exchange.Format) wire.Format {
	t.Helper()
	wf, err := formats.Lookup(f)
	if err != nil {
		t.Fatal(err)
	}
	return wf
}
