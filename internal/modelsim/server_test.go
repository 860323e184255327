package modelsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func postJSON(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// sdkScript is a small two-step tool conversation with a default rule.
const sdkScript = `
rules:
  - name: ask-weather
    match: {user_contains: weather, tool_result: false, tools_offered: [tools.get_weather]}
    reply:
      text: Let me check.
      tool_calls: [{name: tools.get_weather, arguments: {city: Paris}}]
  - name: after-weather
    match: {tool_result_of: tools.get_weather}
    reply: {text: It is sunny in Paris.}
  - name: fallback
    default: true
    reply: {text: Nothing scripted for that.}
`

func startSim(t *testing.T, script string) (*Server, string) {
	t.Helper()
	sc, err := ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(Options{Script: sc})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

const noDefaultScript = `
rules:
  - {name: greet, match: {user_contains: hello}, reply: {text: hi}}
  - {name: overloaded, match: {user_contains: busy}, reply: {error: {status: 529, type: overloaded_error, message: try later}}}
`

func TestUnmatchedIsA400NamingTheRequest(t *testing.T) {
	srv, url := startSim(t, noDefaultScript)
	resp, body := postJSON(t, url+"/v1/chat/completions", `{"model":"m1","messages":[{"role":"user","content":"what now?"}],"tools":[{"type":"function","function":{"name":"svc__x"}}]}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var oe struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal(body, &oe); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no script rule matched", `"m1"`, "what now?", "svc__x"} {
		if !strings.Contains(oe.Error.Message, want) {
			t.Errorf("message %q lacks %q", oe.Error.Message, want)
		}
	}
	if oe.Error.Code != "no_matching_rule" || oe.Error.Type != "invalid_request_error" {
		t.Errorf("error %+v", oe.Error)
	}

	resp, body = postJSON(t, url+"/v1/messages", `{"model":"m2","max_tokens":5,"messages":[{"role":"user","content":"what now?"}]}`)
	var ae struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(body, &ae); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || ae.Type != "error" || !strings.Contains(ae.Error.Message, `"m2"`) {
		t.Fatalf("anthropic unmatched: %d %s", resp.StatusCode, body)
	}
	if recs := srv.Requests(); len(recs) != 2 || recs[0].Status != 400 || recs[0].Rule != "" {
		t.Fatalf("records %+v", recs)
	}
}

func TestScriptedError(t *testing.T) {
	_, url := startSim(t, noDefaultScript)
	resp, body := postJSON(t, url+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"are you busy"}]}`)
	if resp.StatusCode != 529 || !strings.Contains(string(body), `"overloaded_error"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

func TestBadRequests(t *testing.T) {
	_, url := startSim(t, noDefaultScript)
	for _, body := range []string{``, `{`, `{"messages":[]}`, `{"messages":[{"role":"user","content":7}]}`} {
		for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
			if resp, b := postJSON(t, url+path, body); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s %q: %d %s", path, body, resp.StatusCode, b)
			}
		}
	}
	// Oversized bodies are refused, not buffered.
	sc, _ := ParseScript([]byte(noDefaultScript))
	srv, _ := NewServer(Options{Script: sc, MaxBodyBytes: 64})
	rec := &recorder{h: http.Header{}}
	req, _ := http.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(strings.Repeat("x", 100)))
	srv.ServeHTTP(rec, req)
	if rec.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized: %d", rec.status)
	}
}

type recorder struct {
	h      http.Header
	status int
	buf    bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) WriteHeader(s int)   { r.status = s }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = 200
	}
	return r.buf.Write(b)
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func TestRequestsEndpointAndLog(t *testing.T) {
	sc, err := ParseScript([]byte(sdkScript))
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuf{}
	srv, err := NewServer(Options{Script: sc, RequestLog: log, KeepRequests: 2})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) *recorder {
		rec := &recorder{h: http.Header{}}
		req, _ := http.NewRequest(method, path, strings.NewReader(body))
		srv.ServeHTTP(rec, req)
		return rec
	}
	for _, u := range []string{"one", "two", "three"} {
		if rec := do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"system","content":"FEED"},{"role":"user","content":"`+u+`"}]}`); rec.status != 200 {
			t.Fatalf("status %d", rec.status)
		}
	}
	rec := do("GET", "/requests", "")
	var recs []Record
	if err := json.Unmarshal(rec.buf.Bytes(), &recs); err != nil {
		t.Fatal(err)
	}
	// Bounded to the last two, in order, with the body as received.
	if len(recs) != 2 || recs[0].LastUserText != "two" || recs[1].Seq != 3 || recs[1].System != "FEED" || !json.Valid(recs[1].Body) {
		t.Fatalf("records %s", rec.buf.Bytes())
	}
	rec = do("GET", "/requests?since=2", "")
	if err := json.Unmarshal(rec.buf.Bytes(), &recs); err != nil || len(recs) != 1 || recs[0].Seq != 3 {
		t.Fatalf("since=2: %s", rec.buf.Bytes())
	}
	if rec := do("GET", "/requests?since=x", ""); rec.status != http.StatusBadRequest {
		t.Fatalf("since=x: %d", rec.status)
	}
	if lines := strings.Count(log.b.String(), "\n"); lines != 3 {
		t.Fatalf("request log has %d lines", lines)
	}
	if rec := do("DELETE", "/requests", ""); rec.status != http.StatusNoContent || len(srv.Requests()) != 0 {
		t.Fatal("DELETE /requests did not clear")
	}
	if rec := do("GET", "/health", ""); rec.status != 200 || !strings.Contains(rec.buf.String(), `"rules":3`) {
		t.Fatalf("health %d %s", rec.status, rec.buf.String())
	}
}

func TestDelayHonoursClientCancel(t *testing.T) {
	_, url := startSim(t, `rules: [{name: slow, reply: {text: late, delay_ms: 5000}}]`)
	client := &http.Client{Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	if err == nil {
		t.Fatal("delayed reply arrived before the client timeout")
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("client timeout did not end the wait")
	}
}
