package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/history"
)

func TestPassthroughJSON(t *testing.T) {
	for _, f := range testFormats {
		t.Run(string(f), func(t *testing.T) {
			p := newPod(t)
			body := requestBody(f, "fake", false)
			resp := p.post(t, pathOf(f)+"?beta=true", body,
				"Anthropic-Version", "2023-06-01", "Anthropic-Beta", "tools-2024", "Cookie", "session=agent",
				"X-Forwarded-For", "10.0.0.1", "Openai-Organization", "org-other", "Api-Key", aliceToken)
			got := readAll(t, resp.Body)
			want := openAIJSON
			if f == formatAnthropic {
				want = anthropicJSON
			}
			if resp.StatusCode != 200 || got != want {
				t.Fatalf("status %d body %s", resp.StatusCode, got)
			}
			if resp.Header.Get("X-Provider-Request") != "up-1" || resp.Header.Get("Set-Cookie") != "" {
				t.Errorf("response headers %v", resp.Header)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}

			reqs := p.up.requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream saw %d requests", len(reqs))
			}
			up := reqs[0]
			if up.Path != "/v1"+strings.TrimPrefix(pathOf(f), "/v1") || up.Query != "beta=true" {
				t.Errorf("upstream path %s?%s", up.Path, up.Query)
			}
			// The model value is rewritten; every other byte is as sent.
			wantBody := strings.Replace(body, `"fake/`, `"`, 1)
			if string(up.Body) != wantBody {
				t.Errorf("upstream body\n%s\nwant\n%s", up.Body, wantBody)
			}
			assertNoAgentCredential(t, up)
			if up.Header.Get("Authorization") != "Bearer "+providerKey {
				t.Errorf("provider auth = %q", up.Header.Get("Authorization"))
			}
			if up.Header.Get("Anthropic-Version") != "2023-06-01" || up.Header.Get("Anthropic-Beta") != "tools-2024" {
				t.Errorf("anthropic headers not forwarded: %v", up.Header)
			}
			for _, h := range []string{"Cookie", "X-Forwarded-For", "Openai-Organization", "Api-Key"} {
				if up.Header.Get(h) != "" {
					t.Errorf("%s forwarded upstream", h)
				}
			}

			req := p.audit.waitEvent(t, audit.TypeRequest)
			res := p.audit.waitEvent(t, audit.TypeResponse)
			if req.ClawID != "alice" || req.Model != "fake/"+map[exchange.Format]string{formatOpenAI: "gpt-fake", formatAnthropic: "claude-fake"}[f] ||
				req.ManifestPresent == nil || *req.ManifestPresent || req.ToolsCount == nil || *req.ToolsCount != 0 || req.Format != string(f) {
				t.Errorf("request event %+v", req)
			}
			if res.StatusCode != 200 || res.TokensIn == nil || *res.TokensIn != 11 || *res.TokensOut != 3 || res.LatencyMS == nil || res.RequestID != req.RequestID {
				t.Errorf("response event %+v", res)
			}

			entries, st, err := history.ReadFile(history.Path(p.historyDir, "alice"))
			if err != nil || len(entries) != 1 || st.Malformed != 0 {
				t.Fatalf("history %v %+v %v", entries, st, err)
			}
			e := entries[0]
			if e.ID != req.RequestID || e.AgentID != "alice" || e.Pod != "test-pod" || e.Status != "ok" || e.StatusCode != 200 ||
				e.Usage.PromptTokens != 11 || e.Usage.CompletionTokens != 3 || e.Format != string(f) {
				t.Errorf("history entry %+v", e)
			}
			if !jsonEqual(e.Request, body) || !jsonEqual(e.Response, want) {
				t.Errorf("history request/response %s / %s", e.Request, e.Response)
			}
		})
	}
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && mustJSON(x) == mustJSON(y)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// assertNoAgentCredential checks that nothing of the agent's token reached
// the provider (credential starvation, spec 000).
func assertNoAgentCredential(t *testing.T, up seen) {
	t.Helper()
	_, secret, _ := strings.Cut(aliceToken, ":")
	for k, vs := range up.Header {
		for _, v := range vs {
			if strings.Contains(v, secret) {
				t.Errorf("upstream header %s carries the agent secret", k)
			}
		}
	}
	if strings.Contains(string(up.Body), secret) {
		t.Error("upstream body carries the agent secret")
	}
}

func TestPassthroughXAPIKeyProviderAndAgent(t *testing.T) {
	p := newPod(t)
	resp := p.post(t, pathMessages, requestBody(formatAnthropic, "fakeant", false), "X-Api-Key", aliceToken, "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp.Body))
	}
	up := p.up.requests()[0]
	if up.Header.Get("X-Api-Key") != providerKey || up.Header.Get("Authorization") != "" {
		t.Fatalf("provider auth headers %v", up.Header)
	}
	assertNoAgentCredential(t, up)
}

func TestPassthroughStream(t *testing.T) {
	for _, f := range testFormats {
		t.Run(string(f), func(t *testing.T) {
			p := newPod(t)
			resp := p.post(t, pathOf(f), requestBody(f, "fake", true))
			got := readAll(t, resp.Body)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
			}
			// Events are relayed byte for byte, nothing added.
			if got != streamBody(f) {
				t.Fatalf("stream\n%q\nwant\n%q", got, streamBody(f))
			}
			res := p.audit.waitEvent(t, audit.TypeResponse)
			if !res.Stream || res.TokensIn == nil || *res.TokensIn != 11 || *res.TokensOut != 3 {
				t.Errorf("response event %+v", res)
			}
			entries, _, _ := history.ReadFile(history.Path(p.historyDir, "alice"))
			if len(entries) != 1 {
				t.Fatalf("history has %d entries", len(entries))
			}
			e := entries[0]
			if !e.Stream || e.Usage.PromptTokens != 11 {
				t.Errorf("entry %+v", e)
			}
			// The assembled response reads like the non-streaming one.
			var text string
			if f == formatAnthropic {
				var m struct {
					Content    []struct{ Type, Text string }
					StopReason string `json:"stop_reason"`
				}
				_ = json.Unmarshal(e.Response, &m)
				if len(m.Content) == 1 {
					text = m.Content[0].Text
				}
				if m.StopReason != "end_turn" {
					t.Errorf("stop_reason %q in %s", m.StopReason, e.Response)
				}
			} else {
				var m struct {
					Object  string
					Choices []struct {
						Message      struct{ Content string }
						FinishReason string `json:"finish_reason"`
					}
				}
				_ = json.Unmarshal(e.Response, &m)
				if len(m.Choices) == 1 && m.Choices[0].FinishReason == "stop" && m.Object == "chat.completion" {
					text = m.Choices[0].Message.Content
				}
			}
			if text != "hello there" {
				t.Errorf("assembled response %s", e.Response)
			}
		})
	}
}

// TestStreamFirstByteBeforeUpstreamFinishes holds the upstream open after
// its first event until the runner has received that event.
func TestStreamFirstByteBeforeUpstreamFinishes(t *testing.T) {
	for _, f := range testFormats {
		t.Run(string(f), func(t *testing.T) {
			p := newPod(t)
			release := make(chan struct{})
			p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				blocks := strings.SplitAfter(streamBody(f), "\n\n")
				_, _ = w.Write([]byte(blocks[0]))
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-time.After(10 * time.Second):
				}
				for _, b := range blocks[1:] {
					_, _ = w.Write([]byte(b))
				}
			})
			resp := p.post(t, pathOf(f), requestBody(f, "fake", true))
			br := bufio.NewReader(resp.Body)
			first, err := br.ReadString('\n')
			if err != nil || !strings.Contains(first, map[exchange.Format]string{formatOpenAI: "data: ", formatAnthropic: "event: message_start"}[f]) {
				t.Fatalf("first line %q err %v", first, err)
			}
			close(release)
			rest := readAll(t, br)
			if first+rest != streamBody(f) {
				t.Fatalf("stream differs: %q", first+rest)
			}
		})
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			p := newPod(t)
			cancelled := make(chan struct{})
			started := make(chan struct{})
			p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = w.Write([]byte("data: " + openAIStream[0] + "\n\n"))
					w.(http.Flusher).Flush()
				}
				close(started)
				select {
				case <-r.Context().Done():
					close(cancelled)
				case <-time.After(10 * time.Second):
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.front.URL+pathChat, strings.NewReader(requestBody(formatOpenAI, "fake", stream)))
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := p.front.Client().Do(req)
				if err == nil {
					resp.Body.Close()
				}
			}()
			<-started
			cancel() // the runner goes away, mid-stream or before any answer
			select {
			case <-cancelled:
			case <-time.After(5 * time.Second):
				t.Fatal("upstream request not cancelled after the client left")
			}
			<-done
			e := p.audit.waitEvent(t, audit.TypeError)
			if e.StatusCode != StatusClientClosed {
				t.Errorf("error event %+v", e)
			}
		})
	}
}

// A runner may close its connection as soon as it has read a stream's
// terminal event, before the provider has closed the stream (the OpenAI
// SDKs stop at "data: [DONE]" and close the body). The runner has the
// whole answer: the exchange is a response, with its usage, not a
// client that went away.
func TestRunnerLeavingAtTheTerminalEventCompletesTheStream(t *testing.T) {
	for _, f := range testFormats {
		t.Run(string(f), func(t *testing.T) {
			p := newPod(t)
			cancelled := make(chan struct{})
			p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(streamBody(f)))
				w.(http.Flusher).Flush()
				// The provider has not closed the stream yet when the
				// runner leaves.
				select {
				case <-r.Context().Done():
					close(cancelled)
				case <-time.After(10 * time.Second):
				}
			})
			resp := p.post(t, pathOf(f), requestBody(f, "fake", true))
			got := make([]byte, len(streamBody(f)))
			if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != streamBody(f) {
				t.Fatalf("stream %q, err %v", got, err)
			}
			resp.Body.Close() // before the end of the body: the connection closes
			select {
			case <-cancelled:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream call outlived the runner's connection")
			}
			var events []audit.Event
			waitFor(t, "the exchange's last audit event", func() bool {
				events = p.audit.events(t)
				return slices.ContainsFunc(events, func(e audit.Event) bool {
					return e.Type == audit.TypeResponse || e.Type == audit.TypeError
				})
			})
			for _, e := range events {
				switch e.Type {
				case audit.TypeError:
					t.Errorf("error event %d %q: the runner had the whole stream", e.StatusCode, e.Error)
				case audit.TypeResponse:
					if e.StatusCode != http.StatusOK || e.TokensIn == nil || *e.TokensIn != 11 || e.TokensOut == nil || *e.TokensOut != 3 {
						t.Errorf("response event %+v, want 200 with the stream's usage (11 in, 3 out)", e)
					}
				}
			}
		})
	}
}
