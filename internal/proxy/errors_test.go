package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/history"
)

// apiErr decodes an error body, checking it has the endpoint's shape.
func apiErr(t *testing.T, f exchange.Format, body string) (typ, msg string) {
	t.Helper()
	if f == formatAnthropic {
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Type != "error" || e.Error.Message == "" {
			t.Fatalf("not an Anthropic error body: %s", body)
		}
		return e.Error.Type, e.Error.Message
	}
	var e struct {
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not an OpenAI error body: %s", body)
	}
	return e.Error.Type, e.Error.Message
}

func TestEdgeErrors(t *testing.T) {
	type tc struct {
		name    string
		body    string
		headers []string
		status  int
		msg     string
	}
	big := `{"model":"fake/x","pad":"` + strings.Repeat("a", 2048) + `"}`
	cases := func(f exchange.Format) []tc {
		return []tc{
			{"missing credentials", requestBody(f, "fake", false), []string{"Authorization", ""}, 401, "missing credentials"},
			{"basic auth", requestBody(f, "fake", false), []string{"Authorization", "Basic YWxpY2U6eA=="}, 401, "missing credentials"},
			{"token without secret", requestBody(f, "fake", false), []string{"Authorization", "Bearer alice"}, 401, "malformed credentials"},
			{"path traversal id", requestBody(f, "fake", false), []string{"Authorization", "Bearer ../alice:x"}, 401, "malformed credentials"},
			{"unknown agent", requestBody(f, "fake", false), []string{"Authorization", "Bearer mallory:s3cret-alice"}, 403, "invalid credentials"},
			{"wrong secret", requestBody(f, "fake", false), []string{"Authorization", "Bearer alice:nope"}, 403, "invalid credentials"},
			{"wrong secret x-api-key", requestBody(f, "fake", false), []string{"X-Api-Key", "alice:nope"}, 403, "invalid credentials"},
			{"too large", big, nil, 413, "1024-byte limit"},
			{"malformed json", `{"model":`, nil, 400, "not valid JSON"},
			{"missing model", `{"messages":[]}`, nil, 400, `"model" is required`},
			{"model without provider", `{"model":"gpt-4o"}`, nil, 400, "<provider>/<model>"},
			{"unknown provider", `{"model":"nope/m"}`, nil, 400, "known providers: fake, fakeant"},
			{"bad stream", `{"model":"fake/m","stream":1}`, nil, 400, `"stream" must be true or false`},
		}
	}
	for _, f := range testFormats {
		for _, c := range cases(f) {
			t.Run(string(f)+"/"+c.name, func(t *testing.T) {
				p := newPod(t, func(cfg *Config, _ *Options) { cfg.MaxBodyBytes = 1024 })
				resp := p.post(t, pathOf(f), c.body, c.headers...)
				body := readAll(t, resp.Body)
				if resp.StatusCode != c.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
				}
				_, msg := apiErr(t, f, body)
				if !strings.Contains(msg, c.msg) {
					t.Fatalf("message %q, want containing %q", msg, c.msg)
				}
				if len(p.up.requests()) != 0 {
					t.Fatal("a refused request reached the upstream")
				}
				e := p.audit.waitEvent(t, audit.TypeError)
				if e.StatusCode != c.status {
					t.Errorf("audit %+v", e)
				}
			})
		}
	}
}

func TestUnknownAgentAndWrongSecretLookAlike(t *testing.T) {
	p := newPod(t)
	a := p.post(t, pathChat, requestBody(formatOpenAI, "fake", false), "Authorization", "Bearer mallory:whatever")
	b := p.post(t, pathChat, requestBody(formatOpenAI, "fake", false), "Authorization", "Bearer alice:whatever")
	ab, bb := readAll(t, a.Body), readAll(t, b.Body)
	if a.StatusCode != b.StatusCode || ab != bb {
		t.Fatalf("unknown agent %d %s vs wrong secret %d %s", a.StatusCode, ab, b.StatusCode, bb)
	}
}

func TestRoutesAndMethods(t *testing.T) {
	p := newPod(t)
	resp, err := http.Get(p.front.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	if b := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(b, `"ok"`) {
		t.Fatalf("health %d %s", resp.StatusCode, b)
	}
	resp, _ = http.Get(p.front.URL + pathChat)
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET chat: %d", resp.StatusCode)
	}
	resp, _ = http.Get(p.front.URL + "/v1/models")
	if b := readAll(t, resp.Body); resp.StatusCode != 401 {
		t.Fatalf("models without credentials: %d %s", resp.StatusCode, b)
	}
	resp, _ = http.Get(p.front.URL + "/v1/files")
	if b := readAll(t, resp.Body); resp.StatusCode != 404 || !strings.Contains(b, "POST /v1/chat/completions") || !strings.Contains(b, "GET /v1/models") {
		t.Fatalf("unknown path: %d %s", resp.StatusCode, b)
	}
}

func TestUpstreamErrorsRelayedAsIs(t *testing.T) {
	p := newPod(t)
	const body = `{"error":{"message":"slow down","type":"rate_limit_error"}}`
	p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(429)
		_, _ = io.WriteString(w, body)
	})
	resp := p.post(t, pathChat, requestBody(formatOpenAI, "fake", true))
	if got := readAll(t, resp.Body); resp.StatusCode != 429 || got != body || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("%d %s %v", resp.StatusCode, got, resp.Header)
	}
	e := p.audit.waitEvent(t, audit.TypeResponse)
	if e.StatusCode != 429 {
		t.Fatalf("%+v", e)
	}
	if entries, _ := filepath.Glob(filepath.Join(p.historyDir, "alice", "*")); len(entries) != 0 {
		// Only 2xx exchanges are history.
		t.Fatalf("history written for a 429: %v", entries)
	}
}

func TestUpstreamUnreachable(t *testing.T) {
	for _, f := range testFormats {
		p := newPod(t)
		p.up.Close()
		resp := p.post(t, pathOf(f), requestBody(f, "fake", false))
		body := readAll(t, resp.Body)
		if resp.StatusCode != 502 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if _, msg := apiErr(t, f, body); !strings.Contains(msg, "provider fake could not be reached") {
			t.Fatal(msg)
		}
	}
}

func TestFirstByteTimeout(t *testing.T) {
	for _, f := range testFormats {
		p := newPod(t, func(c *Config, _ *Options) { c.FirstByteTimeout = 50 * time.Millisecond })
		p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		})
		resp := p.post(t, pathOf(f), requestBody(f, "fake", false))
		body := readAll(t, resp.Body)
		if resp.StatusCode != 504 {
			t.Fatalf("status %d %s", resp.StatusCode, body)
		}
		if typ, msg := apiErr(t, f, body); typ != "timeout_error" || !strings.Contains(msg, "did not answer within 50ms") {
			t.Fatal(typ, msg)
		}
	}
}

// streamThenFail makes the upstream send the first half of a stream and
// then misbehave.
func streamThenFail(f exchange.Format, fail func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		blocks := strings.SplitAfter(streamBody(f), "\n\n")
		for _, b := range blocks[:3] {
			_, _ = io.WriteString(w, b)
		}
		w.(http.Flusher).Flush()
		fail(w, r)
	}
}

func TestStreamBrokenMidway(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(*Config, *Options)
		fail func(w http.ResponseWriter, r *http.Request)
		msg  string
	}{
		{"idle timeout", func(c *Config, _ *Options) { c.StreamIdleTimeout = 60 * time.Millisecond },
			func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			}, "no data for 60ms"},
		{"clean close without end", nil, func(http.ResponseWriter, *http.Request) {}, "closed the stream before it finished"},
		{"connection dropped", nil, func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }, "stream broke off"},
	}
	for _, f := range testFormats {
		for _, tt := range tests {
			t.Run(string(f)+"/"+tt.name, func(t *testing.T) {
				var opts []podOption
				if tt.cfg != nil {
					opts = append(opts, tt.cfg)
				}
				p := newPod(t, opts...)
				p.up.setHandler(streamThenFail(f, tt.fail))
				resp := p.post(t, pathOf(f), requestBody(f, "fake", true))
				got := readAll(t, resp.Body)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				blocks := strings.SplitAfter(streamBody(f), "\n\n")
				prefix := strings.Join(blocks[:3], "")
				if !strings.HasPrefix(got, prefix) {
					t.Fatalf("relayed part differs: %q", got)
				}
				tail := strings.TrimPrefix(got, prefix)
				if f == formatAnthropic && !strings.HasPrefix(tail, "event: error\n") {
					t.Fatalf("no Anthropic error event: %q", tail)
				}
				data := strings.TrimSpace(tail[strings.Index(tail, "data: ")+6:])
				if _, msg := apiErr(t, f, data); !strings.Contains(msg, tt.msg) {
					t.Fatalf("in-band message %q, want %q", msg, tt.msg)
				}
				e := p.audit.waitEvent(t, audit.TypeError)
				if !strings.Contains(e.Error, tt.msg) {
					t.Errorf("audit %+v", e)
				}
			})
		}
	}
}

func TestStreamEOFAfterStopReasonIsComplete(t *testing.T) {
	// Some OpenAI-compatible providers end without "data: [DONE]".
	p := newPod(t)
	p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range openAIStream[:4] {
			_, _ = io.WriteString(w, "data: "+d+"\n\n")
		}
	})
	resp := p.post(t, pathChat, requestBody(formatOpenAI, "fake", true))
	if got := readAll(t, resp.Body); strings.Contains(got, "error") {
		t.Fatalf("error appended to a finished stream: %q", got)
	}
	p.audit.waitEvent(t, audit.TypeResponse)
}

func TestProviderStreamErrorRelayedNotRecorded(t *testing.T) {
	for _, f := range testFormats {
		t.Run(string(f), func(t *testing.T) {
			p := newPod(t)
			p.up.setHandler(streamThenFail(f, func(w http.ResponseWriter, r *http.Request) {
				if f == formatAnthropic {
					_, _ = io.WriteString(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
				} else {
					_, _ = io.WriteString(w, "data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\"}}\n\n")
				}
			}))
			resp := p.post(t, pathOf(f), requestBody(f, "fake", true))
			got := readAll(t, resp.Body)
			if strings.Count(got, "Overloaded") != 1 || strings.Contains(got, "upstream_stream_error") {
				t.Fatalf("stream %q", got)
			}
			e := p.audit.waitEvent(t, audit.TypeError)
			if !strings.Contains(e.Error, "Overloaded") {
				t.Fatalf("%+v", e)
			}
			if es, _, _ := history.ReadFile(history.Path(p.historyDir, "alice")); len(es) != 0 {
				t.Fatal("failed stream recorded as history")
			}
		})
	}
}

func TestUpstreamBodyCutShortAbortsResponse(t *testing.T) {
	p := newPod(t)
	p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","choi`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the provider's connection drops
	})
	req, _ := http.NewRequest(http.MethodPost, p.front.URL+pathChat, strings.NewReader(requestBody(formatOpenAI, "fake", false)))
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := p.front.Client().Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("a truncated body reached the runner as if complete")
	}
	e := p.audit.waitEvent(t, audit.TypeError)
	if !strings.Contains(e.Error, "broke off") {
		t.Fatalf("%+v", e)
	}
}
