package toolexec

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// received is one request as a test service saw it.
type received struct {
	Method     string
	RequestURI string
	Path       string
	Query      url.Values
	Header     http.Header
	Body       []byte
}

// service is a real HTTP service that records every request and answers
// with respond.
type service struct {
	*httptest.Server
	mu   sync.Mutex
	seen []received
}

func newService(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *service {
	t.Helper()
	s := &service{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, received{r.Method, r.RequestURI, r.URL.Path, r.URL.Query(), r.Header.Clone(), body})
		n := len(s.seen)
		s.mu.Unlock()
		respond(w, r, n)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *service) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.seen...)
}

func (s *service) only(t *testing.T) received {
	t.Helper()
	got := s.requests()
	if len(got) != 1 {
		t.Fatalf("service saw %d requests, want 1", len(got))
	}
	return got[0]
}

func jsonReply(body string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

func httpTool(base, method, path, schema string) *manifest.Tool {
	if schema == "" {
		schema = `{"type":"object"}`
	}
	return &manifest.Tool{
		Name:        "svc.tool",
		InputSchema: json.RawMessage(schema),
		Execution: manifest.Execution{
			Transport: manifest.TransportHTTP,
			Service:   "svc",
			BaseURL:   base,
			Method:    method,
			Path:      path,
		},
	}
}

func run(t *testing.T, e *Executor, tool *manifest.Tool, args string) Envelope {
	t.Helper()
	return e.Run(context.Background(), Call{AgentID: "analyst-0", Tool: tool, Arguments: json.RawMessage(args), Timeout: 5 * time.Second, MaxResultBytes: 16384})
}

func wantFail(t *testing.T, env Envelope, code string, rpc int) {
	t.Helper()
	if env.OK || env.Error == nil {
		t.Fatalf("envelope = %s, want failure %s", mustJSON(env), code)
	}
	if env.Error.Code != code || env.Error.RPCCode != rpc {
		t.Fatalf("error = %+v, want code %s rpc %d", env.Error, code, rpc)
	}
}

func wantOK(t *testing.T, env Envelope) {
	t.Helper()
	if !env.OK || env.Error != nil {
		t.Fatalf("envelope = %s, want ok", mustJSON(env))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestPathPlaceholdersAreOneEscapedSegment(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	for _, tc := range []struct {
		value   string
		wantURI string
	}{
		{"abc", "/api/items/abc/detail"},
		{"../x", "/api/items/..%2Fx/detail"},
		{"../../admin", "/api/items/..%2F..%2Fadmin/detail"},
		{"a/b?c", "/api/items/a%2Fb%3Fc/detail"},
		{"%2F", "/api/items/%252F/detail"},
		{"x#frag", "/api/items/x%23frag/detail"},
		{"a b", "/api/items/a%20b/detail"},
		{"...", "/api/items/.../detail"},
		{"ünï", "/api/items/%C3%BCn%C3%AF/detail"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			svc := newService(t, jsonReply(`{"ok":1}`))
			tool := httpTool(svc.URL, "GET", "/api/items/{id}/detail", `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
			env := run(t, e, tool, mustJSON(map[string]string{"id": tc.value}))
			wantOK(t, env)
			got := svc.only(t)
			if got.RequestURI != tc.wantURI {
				t.Errorf("request URI = %q, want %q", got.RequestURI, tc.wantURI)
			}
			if len(got.Query) != 0 {
				t.Errorf("query = %v, want none (the id was consumed by the path)", got.Query)
			}
			if want := "/api/items/" + tc.value + "/detail"; got.Path != want {
				t.Errorf("decoded path = %q, want %q", got.Path, want)
			}
		})
	}
}

func TestPathPlaceholderRejections(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	for _, args := range []string{
		`{"id":""}`, `{"id":".."}`, `{"id":"."}`, `{}`, `{"id":null}`, `{"id":{"a":1}}`, `{"id":[1]}`,
	} {
		t.Run(args, func(t *testing.T) {
			svc := newService(t, jsonReply(`{}`))
			env := run(t, e, httpTool(svc.URL, "GET", "/api/items/{id}", ""), args)
			wantFail(t, env, CodeInvalidArguments, RPCInvalidParams)
			if !strings.Contains(env.Error.Message, "id") {
				t.Errorf("message %q does not name the argument", env.Error.Message)
			}
			if n := len(svc.requests()); n != 0 {
				t.Fatalf("service was called %d times", n)
			}
		})
	}
	// Numbers and booleans are fine as segments.
	svc := newService(t, jsonReply(`{}`))
	wantOK(t, run(t, e, httpTool(svc.URL, "GET", "/a/{n}/{b}", ""), `{"n":12.50,"b":true}`))
	if got := svc.only(t).RequestURI; got != "/a/12.50/true" {
		t.Errorf("request URI = %q", got)
	}
}

func TestDotSegmentBuiltFromAdjacentValuesIsRefused(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	svc := newService(t, jsonReply(`{}`))
	env := run(t, e, httpTool(svc.URL, "GET", "/files/{a}{b}/x", ""), `{"a":".","b":"."}`)
	wantFail(t, env, CodeInvalidArguments, RPCInvalidParams)
	if n := len(svc.requests()); n != 0 {
		t.Fatalf("service was called %d times", n)
	}
}

func TestClawIDIsAlwaysTheAgent(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	schema := `{"type":"object","properties":{"claw_id":{"type":"string"},"symbol":{"type":"string"}},"required":["claw_id"]}`

	t.Run("path placeholder", func(t *testing.T) {
		svc := newService(t, jsonReply(`{"balance":5}`))
		env := run(t, e, httpTool(svc.URL, "GET", "/api/v1/market_context/{claw_id}", schema), `{"claw_id":"executor-9","symbol":"AAPL"}`)
		wantOK(t, env)
		got := svc.only(t)
		if got.RequestURI != "/api/v1/market_context/analyst-0?symbol=AAPL" {
			t.Errorf("request URI = %q", got.RequestURI)
		}
	})
	t.Run("model omits a required claw_id", func(t *testing.T) {
		svc := newService(t, jsonReply(`{}`))
		wantOK(t, run(t, e, httpTool(svc.URL, "GET", "/ctx/{claw_id}", schema), `{}`))
		if got := svc.only(t).RequestURI; got != "/ctx/analyst-0" {
			t.Errorf("request URI = %q", got)
		}
	})
	t.Run("body", func(t *testing.T) {
		svc := newService(t, jsonReply(`{}`))
		wantOK(t, run(t, e, httpTool(svc.URL, "POST", "/orders", schema), `{"claw_id":"someone-else","symbol":"X"}`))
		var body map[string]any
		if err := json.Unmarshal(svc.only(t).Body, &body); err != nil {
			t.Fatal(err)
		}
		if body["claw_id"] != "analyst-0" || body["symbol"] != "X" {
			t.Errorf("body = %v", body)
		}
	})
	t.Run("query without schema property", func(t *testing.T) {
		svc := newService(t, jsonReply(`{}`))
		wantOK(t, run(t, e, httpTool(svc.URL, "GET", "/q", ""), `{"claw_id":"someone-else"}`))
		if got := svc.only(t).Query.Get("claw_id"); got != "analyst-0" {
			t.Errorf("claw_id in query = %q", got)
		}
	})
	t.Run("path placeholder without schema property", func(t *testing.T) {
		svc := newService(t, jsonReply(`{}`))
		wantOK(t, run(t, e, httpTool(svc.URL, "DELETE", "/sessions/{claw_id}", ""), `{"claw_id":"../other"}`))
		got := svc.only(t)
		if got.RequestURI != "/sessions/analyst-0" || got.Method != "DELETE" {
			t.Errorf("got %s %q", got.Method, got.RequestURI)
		}
	})
}

func TestQueryForGetAndDelete(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	for _, method := range []string{"GET", "DELETE"} {
		t.Run(method, func(t *testing.T) {
			svc := newService(t, jsonReply(`{}`))
			env := run(t, e, httpTool(svc.URL, method, "/search?v=2", ""),
				`{"q":"a b&c=d","n":5,"tags":["x","y",3],"filter":{"a":1},"flag":true,"none":null}`)
			wantOK(t, env)
			got := svc.only(t)
			want := url.Values{"v": {"2"}, "q": {"a b&c=d"}, "n": {"5"}, "tags": {"x", "y", "3"}, "filter": {`{"a":1}`}, "flag": {"true"}}
			if mustJSON(got.Query) != mustJSON(want) {
				t.Errorf("query = %v, want %v", got.Query, want)
			}
			if len(got.Body) != 0 {
				t.Errorf("%s sent a body: %q", method, got.Body)
			}
		})
	}
}

func TestJSONBodyAndBodyKey(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	schema := `{"type":"object","properties":{"id":{"type":"string"},"symbol":{"type":"string"},"quantity":{"type":"number"}}}`
	for _, tc := range []struct {
		method, bodyKey, want string
	}{
		{"POST", "", `{"quantity":10.5,"symbol":"<AAPL>"}`},
		{"PUT", "order", `{"order":{"quantity":10.5,"symbol":"<AAPL>"}}`},
		{"PATCH", "", `{"quantity":10.5,"symbol":"<AAPL>"}`},
	} {
		t.Run(tc.method+tc.bodyKey, func(t *testing.T) {
			svc := newService(t, jsonReply(`{"id":"t-1"}`))
			tool := httpTool(svc.URL, tc.method, "/orders/{id}", schema)
			tool.Execution.BodyKey = tc.bodyKey
			env := run(t, e, tool, `{"id":"o1","symbol":"<AAPL>","quantity":10.5}`)
			wantOK(t, env)
			if string(env.Data) != `{"id":"t-1"}` {
				t.Errorf("data = %s", env.Data)
			}
			got := svc.only(t)
			if got.Method != tc.method || got.RequestURI != "/orders/o1" {
				t.Errorf("got %s %s", got.Method, got.RequestURI)
			}
			if string(got.Body) != tc.want {
				t.Errorf("body = %s, want %s", got.Body, tc.want)
			}
			if ct := got.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
	// No arguments left: an empty object, not nothing.
	svc := newService(t, jsonReply(`{}`))
	wantOK(t, run(t, e, httpTool(svc.URL, "POST", "/ping", ""), ``))
	if got := string(svc.only(t).Body); got != `{}` {
		t.Errorf("body = %q, want {}", got)
	}
}

func TestAuthAndIdentityHeaders(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	svc := newService(t, jsonReply(`{}`))
	tool := httpTool(svc.URL, "GET", "/x", "")
	tool.Execution.Auth = &manifest.Auth{Type: "bearer", Token: "descriptor-token"}

	wantOK(t, run(t, e, tool, `{}`))
	env := e.Run(context.Background(), Call{AgentID: "analyst-0", Tool: tool, Auth: &manifest.Auth{Type: "bearer", Token: "projected-token"}, Timeout: time.Second})
	wantOK(t, env)
	notool := httpTool(svc.URL, "GET", "/x", "")
	wantOK(t, run(t, e, notool, `{}`))

	got := svc.requests()
	if len(got) != 3 {
		t.Fatalf("%d requests", len(got))
	}
	for i, want := range []string{"Bearer descriptor-token", "Bearer projected-token", ""} {
		if a := got[i].Header.Get("Authorization"); a != want {
			t.Errorf("request %d Authorization = %q, want %q", i, a, want)
		}
		if id := got[i].Header.Get("X-Claw-ID"); id != "analyst-0" {
			t.Errorf("request %d X-Claw-ID = %q", i, id)
		}
	}
}

func TestSchemaViolationsNeverReachTheService(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	schema := `{"type":"object","properties":{"symbol":{"type":"string","minLength":1},"side":{"enum":["buy","sell"]},"quantity":{"type":"number","exclusiveMinimum":0}},"required":["symbol","side","quantity"],"additionalProperties":false}`
	for _, tc := range []struct {
		args, mention string
	}{
		{`{"symbol":"X","side":"buy"}`, "quantity"},
		{`{"symbol":"X","side":"buy","quantity":"ten"}`, "/quantity"},
		{`{"symbol":"X","side":"hold","quantity":1}`, "/side"},
		{`{"symbol":"X","side":"buy","quantity":-1}`, "/quantity"},
		{`{"symbol":"X","side":"buy","quantity":1,"extra":true}`, "extra"},
		{`[1,2]`, "object"},
		{`"str"`, "object"},
		{`{"symbol":`, "JSON"},
		{`{"a":1} {"b":2}`, "single"},
		{`{"symbol":"X","side":"buy","quantity":1}xyz`, "single"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			svc := newService(t, jsonReply(`{}`))
			env := run(t, e, httpTool(svc.URL, "POST", "/trades", schema), tc.args)
			wantFail(t, env, CodeInvalidArguments, RPCInvalidParams)
			if !strings.Contains(env.Error.Message, tc.mention) {
				t.Errorf("message %q does not mention %q", env.Error.Message, tc.mention)
			}
			if strings.Contains(env.Error.Message, svc.URL) || strings.Contains(env.Error.Message, "mem://") {
				t.Errorf("message leaks a location: %q", env.Error.Message)
			}
			if n := len(svc.requests()); n != 0 {
				t.Fatalf("service was called %d times", n)
			}
		})
	}
	// null and empty arguments are {}.
	svc := newService(t, jsonReply(`{}`))
	wantOK(t, run(t, e, httpTool(svc.URL, "GET", "/x", `{"type":"object","properties":{"a":{"type":"string"}}}`), `null`))
}

func TestServiceErrorsAndUnavailable(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	const token = "s3cr3t-service-token"
	svc := newService(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.WriteHeader(http.StatusInternalServerError)
		// A careless service echoing its address and the credential.
		io.WriteString(w, "boom at http://"+r.Host+"/internal/debug with "+r.Header.Get("Authorization")+" token="+token+strings.Repeat(" pad", 500))
	})
	tool := httpTool(svc.URL, "GET", "/x", "")
	tool.Execution.Auth = &manifest.Auth{Type: "bearer", Token: token}
	env := run(t, e, tool, `{}`)
	wantFail(t, env, CodeServiceError, 0)
	msg := env.Error.Message
	if !strings.Contains(msg, "500") || !strings.Contains(msg, "boom") {
		t.Errorf("message %q lacks the status or the snippet", msg)
	}
	host := strings.TrimPrefix(svc.URL, "http://")
	for _, leak := range []string{token, svc.URL, host, "127.0.0.1"} {
		if strings.Contains(msg, leak) {
			t.Errorf("message leaks %q: %q", leak, msg)
		}
	}
	if len(msg) > DefaultErrorSnippetBytes+100 {
		t.Errorf("message is %d bytes, not bounded", len(msg))
	}

	// A service that is not there.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	tool = httpTool(deadURL, "GET", "/x", "")
	tool.Execution.Auth = &manifest.Auth{Type: "bearer", Token: token}
	env = run(t, e, tool, `{}`)
	wantFail(t, env, CodeUnavailable, 0)
	for _, leak := range []string{token, deadURL, strings.TrimPrefix(deadURL, "http://"), "127.0.0.1"} {
		if strings.Contains(env.Error.Message, leak) {
			t.Errorf("message leaks %q: %q", leak, env.Error.Message)
		}
	}
	if !strings.Contains(env.Error.Message, "svc") {
		t.Errorf("message %q does not name the service", env.Error.Message)
	}

	// Redirects are not followed.
	redir := newService(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		http.Redirect(w, r, "http://example.invalid/elsewhere", http.StatusFound)
	})
	env = run(t, e, httpTool(redir.URL, "GET", "/x", ""), `{}`)
	wantFail(t, env, CodeServiceError, 0)
	if strings.Contains(env.Error.Message, "example.invalid") {
		t.Errorf("message leaks the redirect target: %q", env.Error.Message)
	}
}

func TestAnswerShapes(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	for _, tc := range []struct {
		name, ctype, body, want string
		status                  int
	}{
		{"json", "application/json", "{\n  \"a\": [1, 2],\n  \"h\": \"<b>\"\n}\n", `{"a":[1,2],"h":"\u003cb\u003e"}`, 200},
		{"problem+json", "application/problem+json", `{"x":1}`, `{"x":1}`, 200},
		{"text", "text/plain; charset=utf-8", "hello \"world\"", `"hello \"world\""`, 200},
		{"text that looks like json", "text/plain", `{"x":1}`, `"{\"x\":1}"`, 200},
		{"no type json", "", `[1,2]`, `[1,2]`, 200},
		{"invalid json", "application/json", `{"x":`, `"{\"x\":"`, 200},
		{"empty", "", "", `null`, 204},
		{"created", "application/json", `{"id":7}`, `{"id":7}`, 201},
		{"binary", "image/png", "\x89PNG\r\n\x1a\n\x00\xff\xfe", `"[11 bytes of binary content (image/png) not shown]"`, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := newService(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				} else {
					w.Header()["Content-Type"] = nil
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			env := run(t, e, httpTool(svc.URL, "GET", "/x", ""), `{}`)
			wantOK(t, env)
			if string(env.Data) != tc.want {
				t.Errorf("data = %s, want %s", env.Data, tc.want)
			}
			// Marshalling the envelope keeps data as measured.
			if b, _ := json.Marshal(env); !strings.Contains(string(b), tc.want) {
				t.Errorf("marshalled envelope %s changed the data", b)
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	slow := newService(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	})
	tool := httpTool(slow.URL, "GET", "/slow", "")

	start := time.Now()
	env := e.Run(context.Background(), Call{AgentID: "a", Tool: tool, Timeout: 100 * time.Millisecond})
	wantFail(t, env, CodeTimeout, RPCTimeout)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timeout took %s", d)
	}
	if strings.Contains(env.Error.Message, slow.URL) {
		t.Errorf("message leaks the URL: %q", env.Error.Message)
	}

	// The message states the bound it was given (the tool's timeout_ms
	// or the policy's: internal/toolcall decides which).
	if !strings.Contains(env.Error.Message, "100ms") {
		t.Errorf("message %q does not state the timeout", env.Error.Message)
	}

	// The caller's deadline (the turn's total budget) is a timeout too.
	ctx, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stop()
	env = e.Run(ctx, Call{AgentID: "a", Tool: httpTool(slow.URL, "GET", "/slow", ""), Timeout: time.Minute})
	wantFail(t, env, CodeTimeout, RPCTimeout)
	if !strings.Contains(env.Error.Message, "budget") {
		t.Errorf("message %q", env.Error.Message)
	}

	// A canceled caller is not a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	env = e.Run(ctx, Call{AgentID: "a", Tool: httpTool(slow.URL, "GET", "/slow", ""), Timeout: time.Minute})
	wantFail(t, env, CodeCanceled, 0)
}

func TestRetries(t *testing.T) {
	e := New(Options{RetryBaseBackoff: 5 * time.Millisecond})
	defer e.Close()
	flaky := func(failures int, status int) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, _ *http.Request, n int) {
			if n <= failures {
				w.WriteHeader(status)
				io.WriteString(w, "try again")
				return
			}
			io.WriteString(w, `{"ok":true}`)
		}
	}
	yes := true
	for _, tc := range []struct {
		name        string
		annotations *manifest.Annotations
		retry       *manifest.Retry
		status      int
		wantOK      bool
		wantCalls   int
	}{
		{"read-only retried", &manifest.Annotations{ReadOnly: &yes}, &manifest.Retry{MaxAttempts: 3}, 503, true, 3},
		{"idempotent retried fixed", &manifest.Annotations{IdempotentHint: &yes}, &manifest.Retry{MaxAttempts: 3, Backoff: "fixed"}, 502, true, 3},
		{"gives up at max_attempts", &manifest.Annotations{ReadOnlyHint: &yes}, &manifest.Retry{MaxAttempts: 2}, 504, false, 2},
		{"side effects never retried", nil, &manifest.Retry{MaxAttempts: 3}, 503, false, 1},
		{"no retry configured", &manifest.Annotations{ReadOnly: &yes}, nil, 503, false, 1},
		{"non-transient not retried", &manifest.Annotations{ReadOnly: &yes}, &manifest.Retry{MaxAttempts: 3}, 500, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := newService(t, flaky(2, tc.status))
			tool := httpTool(svc.URL, "POST", "/x", "")
			tool.Annotations = tc.annotations
			tool.Execution.Retry = tc.retry
			env := run(t, e, tool, `{"a":1}`)
			if env.OK != tc.wantOK {
				t.Errorf("envelope = %s", mustJSON(env))
			}
			got := svc.requests()
			if len(got) != tc.wantCalls {
				t.Errorf("service saw %d calls, want %d", len(got), tc.wantCalls)
			}
			for _, r := range got {
				if string(r.Body) != `{"a":1}` {
					t.Errorf("retry sent body %q", r.Body)
				}
			}
		})
	}

	// Retries stay within the timeout.
	svc := newService(t, flaky(1000, 503))
	tool := httpTool(svc.URL, "GET", "/x", "")
	tool.Annotations = &manifest.Annotations{ReadOnly: &yes}
	tool.Execution.Retry = &manifest.Retry{MaxAttempts: 10}
	slowRetry := New(Options{RetryBaseBackoff: 100 * time.Millisecond})
	defer slowRetry.Close()
	start := time.Now()
	env := slowRetry.Run(context.Background(), Call{AgentID: "a", Tool: tool, Timeout: 350 * time.Millisecond})
	if env.OK {
		t.Fatal("want failure")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("retries ran %s past a 350ms timeout", d)
	}
	if n := len(svc.requests()); n < 2 || n > 3 {
		t.Errorf("service saw %d calls within 350ms at 100ms/200ms backoff", n)
	}

	// Connection failures of a read-only tool are retried too.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	tool = httpTool(dead.URL, "GET", "/x", "")
	tool.Annotations = &manifest.Annotations{ReadOnly: &yes}
	tool.Execution.Retry = &manifest.Retry{MaxAttempts: 3}
	env = run(t, e, tool, `{}`)
	wantFail(t, env, CodeUnavailable, 0)
	if !strings.Contains(env.Error.Message, "after 3 attempts") {
		t.Errorf("message %q does not count attempts", env.Error.Message)
	}
}

func TestTruncation(t *testing.T) {
	e := New(Options{MaxResponseBytes: 64 << 10})
	defer e.Close()
	big := `{"rows":[` + strings.Repeat(`{"name":"row","v":"<&>"},`, 2000) + `{}]}`
	canon, _ := jsontop.Canonical([]byte(big))
	textBody := strings.Repeat("héllo \"wörld\" <tag>\n", 500)
	huge := strings.Repeat("x", 64<<10-1) + strings.Repeat("é", 100<<10)
	for _, tc := range []struct {
		name, ctype, body string
		wantOriginal      int
	}{
		{"json", "application/json", big, len(canon)},
		{"text", "text/plain", textBody, len(jsontop.AppendString(nil, textBody))},
		{"over the read bound", "text/plain", huge, len(huge)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := newService(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Content-Type", tc.ctype)
				io.WriteString(w, tc.body)
			})
			for _, bound := range []int{100, 1000, 4096} {
				env := e.Run(context.Background(), Call{AgentID: "a", Tool: httpTool(svc.URL, "GET", "/x", ""), Timeout: 5 * time.Second, MaxResultBytes: bound})
				wantOK(t, env)
				if !env.Truncated || env.OriginalBytes != tc.wantOriginal {
					t.Fatalf("bound %d: truncated=%v original_bytes=%d, want true, %d", bound, env.Truncated, env.OriginalBytes, tc.wantOriginal)
				}
				var s string
				if err := json.Unmarshal(env.Data, &s); err != nil {
					t.Fatalf("bound %d: data is not a JSON string: %s", bound, env.Data)
				}
				if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
					t.Errorf("bound %d: cut inside a rune", bound)
				}
				src := tc.body
				if tc.ctype == "application/json" {
					src = string(canon)
				}
				if !strings.HasPrefix(src, s) || len(s) < bound/8 {
					t.Errorf("bound %d: data is not a useful prefix (%d bytes)", bound, len(s))
				}
				whole, _ := json.Marshal(env)
				if len(whole) > bound {
					t.Errorf("bound %d: envelope is %d bytes", bound, len(whole))
				}
			}
		})
	}

	// At or under the bound nothing changes.
	svc := newService(t, jsonReply(`{"a":"b"}`))
	env := e.Run(context.Background(), Call{AgentID: "a", Tool: httpTool(svc.URL, "GET", "/x", ""), Timeout: time.Second, MaxResultBytes: len(`{"a":"b"}`)})
	wantOK(t, env)
	if env.Truncated || string(env.Data) != `{"a":"b"}` {
		t.Errorf("envelope = %s", mustJSON(env))
	}
}

func TestOutputSchema(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	svc := newService(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/good" {
			io.WriteString(w, `{"balance":5}`)
			return
		}
		io.WriteString(w, `{"balance":"lots"}`)
	})
	out := json.RawMessage(`{"type":"object","properties":{"balance":{"type":"number"}},"required":["balance"]}`)
	good := httpTool(svc.URL, "GET", "/good", "")
	good.OutputSchema = out
	wantOK(t, run(t, e, good, `{}`))
	bad := httpTool(svc.URL, "GET", "/bad", "")
	bad.OutputSchema = out
	env := run(t, e, bad, `{}`)
	wantFail(t, env, CodeInvalidResult, 0)
	if !strings.Contains(env.Error.Message, "/balance") {
		t.Errorf("message %q does not name the field", env.Error.Message)
	}
}

func TestMisconfiguredTools(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	wantFail(t, e.Run(context.Background(), Call{AgentID: "a"}), CodeUnknownTool, 0)

	tool := httpTool("http://127.0.0.1:1", "GET", "/x", `{"type":"object","properties":{"a":{"pattern":"("}}}`)
	wantFail(t, run(t, e, tool, `{}`), CodeMisconfigured, 0)

	tool = httpTool("http://127.0.0.1:1", "GET", "/x", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)
	wantFail(t, run(t, e, tool, `{}`), CodeMisconfigured, 0)

	tool = httpTool("http://127.0.0.1:1", "GET", "/x", "")
	tool.Execution.Transport = "carrier-pigeon"
	wantFail(t, run(t, e, tool, `{}`), CodeMisconfigured, 0)
}

func TestConcurrentCalls(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	svc := newService(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"`+r.URL.Query().Get("id")+`"}`)
	})
	tool := httpTool(svc.URL, "GET", "/x", `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := strings.Repeat("i", i+1)
			env := run(t, e, tool, `{"id":"`+id+`"}`)
			if !env.OK || string(env.Data) != `{"id":"`+id+`"}` {
				t.Errorf("call %d: %s", i, mustJSON(env))
			}
		}()
	}
	wg.Wait()
}
