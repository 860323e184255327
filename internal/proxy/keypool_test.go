package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/clawdapus/clawgo/internal/alerts"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// poolProviders: providers "pool" (bearer) and "poolant" (x-api-key),
// each with keys a (k-a) and b (k-b), a the active one (tried first).
const poolProviders = `{"version":2,"providers":{
	"pool":{"base_url":"{UP}/v1","auth":"bearer","active_key_id":"a","keys":[{"id":"a","secret":"k-a"},{"id":"b","secret":"k-b"}]},
	"poolant":{"base_url":"{UP}/v1","auth":"x-api-key","active_key_id":"a","keys":[{"id":"a","secret":"k-a"},{"id":"b","secret":"k-b"}]}}}`

// keyOf is the provider key a request to the fake upstream carried.
func keyOf(h http.Header) string {
	if v := h.Get("X-Api-Key"); v != "" {
		return v
	}
	return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
}

// keyed answers by the key a request carried: a status (with its
// Retry-After) for the keys in bad, else the next handler.
func keyed(bad map[string][2]string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if st, ok := bad[keyOf(r.Header)]; ok {
			if st[1] != "" {
				w.Header().Set("Retry-After", st[1])
			}
			w.Header().Set("Content-Type", "application/json")
			var code int
			fmt.Sscan(st[0], &code)
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"rate_limit_error","message":"limited %s"}}`, st[0])
			return
		}
		next(w, r)
	}
}

func keysSeen(u *upstream) []string {
	var out []string
	for _, s := range u.requests() {
		out = append(out, keyOf(s.Header))
	}
	return out
}

// TestLimitedKeyAnotherServes: the first key answers 429; the request is
// sent again at once with the second key, and the runner, with either
// official SDK, streamed or not, in each format, gets the answer. The
// next request goes to the second key only: the first cools down.
func TestLimitedKeyAnotherServes(t *testing.T) {
	type call func(t *testing.T, p *pod) string
	cases := map[string]call{
		"openai chat": func(t *testing.T, p *pod) string {
			c := openAIClient(p, aliceToken)
			res, err := c.Chat.Completions.New(context.Background(), openAIParams("pool/gpt-fake"))
			if err != nil {
				t.Fatal(err)
			}
			return res.Choices[0].Message.Content
		},
		"openai chat streamed": func(t *testing.T, p *pod) string {
			c := openAIClient(p, aliceToken)
			s := c.Chat.Completions.NewStreaming(context.Background(), openAIParams("pool/gpt-fake"))
			var b strings.Builder
			for s.Next() {
				if c := s.Current(); len(c.Choices) > 0 {
					b.WriteString(c.Choices[0].Delta.Content)
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			return b.String()
		},
		"anthropic": func(t *testing.T, p *pod) string {
			c := anthropicClient(p, aliceToken)
			res, err := c.Messages.New(context.Background(), anthropicParams("poolant/claude-fake"))
			if err != nil {
				t.Fatal(err)
			}
			return res.Content[0].Text
		},
		"anthropic streamed": func(t *testing.T, p *pod) string {
			c := anthropicClient(p, aliceToken)
			s := c.Messages.NewStreaming(context.Background(), anthropicParams("poolant/claude-fake"))
			var m anthropic.Message
			for s.Next() {
				if err := m.Accumulate(s.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			return m.Content[0].Text
		},
		"responses": func(t *testing.T, p *pod) string {
			res, err := newResponse(t, openAIClient(p, aliceToken), "pool/gpt-fake", "")
			if err != nil {
				t.Fatal(err)
			}
			return res.OutputText()
		},
		"responses streamed": func(t *testing.T, p *pod) string {
			c := openAIClient(p, aliceToken)
			s := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
				Model: "pool/gpt-fake", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
			var text string
			for s.Next() {
				if e := s.Current(); e.Type == "response.completed" {
					text = e.Response.OutputText()
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			return text
		},
	}
	for name, do := range cases {
		t.Run(name, func(t *testing.T) {
			p := newPodWith(t, poolProviders)
			sp := &storingProvider{}
			p.up.setHandler(keyed(map[string][2]string{"k-a": {"429", "30"}}, sp.ServeHTTP))
			if got := do(t, p); got != "hello there" {
				t.Fatalf("answer %q", got)
			}
			if got := keysSeen(p.up); strings.Join(got, ",") != "k-a,k-b" {
				t.Fatalf("keys sent %v, want k-a (limited) then k-b", got)
			}
			if got := do(t, p); got != "hello there" {
				t.Fatalf("second answer %q", got)
			}
			if got := keysSeen(p.up); strings.Join(got, ",") != "k-a,k-b,k-b" {
				t.Fatalf("keys sent %v: the cooling key must not be tried again", got)
			}
			for _, ps := range p.srv.KeyPools().Snapshot() {
				if ps.Provider == providerOfCase(name) && (ps.Keys[0].ID != "a" || ps.Keys[0].State != 1) {
					t.Fatalf("key %+v of %s, want a cooling (1)", ps.Keys[0], ps.Provider)
				}
			}
		})
	}
}

func providerOfCase(name string) string {
	if strings.HasPrefix(name, "anthropic") {
		return "poolant"
	}
	return "pool"
}

// TestDeadKeySkipped: a key refused with 401 is dead: the request goes
// to the next key at once, and no later request uses the dead key.
func TestDeadKeySkipped(t *testing.T) {
	p := newPodWith(t, poolProviders)
	p.up.setHandler(keyed(map[string][2]string{"k-a": {"401", ""}}, defaultProvider))
	for i := range 4 {
		resp := p.post(t, pathChat, requestBody(formatOpenAI, "pool", false))
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, readAll(t, resp.Body))
		}
	}
	if got := strings.Join(keysSeen(p.up), ","); got != "k-a,k-b,k-b,k-b,k-b" {
		t.Fatalf("keys sent %s, want the dead key once", got)
	}
}

// TestAllKeysCoolingRetryAfter: when every key is limited, the runner
// gets the provider's 429 with the shortest Retry-After, and the next
// request is answered so without reaching the provider.
func TestAllKeysCoolingRetryAfter(t *testing.T) {
	p := newPodWith(t, poolProviders)
	p.up.setHandler(keyed(map[string][2]string{"k-a": {"429", "30"}, "k-b": {"429", "12"}}, defaultProvider))
	resp := p.post(t, pathChat, requestBody(formatOpenAI, "pool", false))
	body := readAll(t, resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "12" || !strings.Contains(body, "limited 429") {
		t.Fatalf("%d Retry-After %q %s, want the provider's 429 with Retry-After 12", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	resp = p.post(t, pathMessages, requestBody(formatAnthropic, "pool", false))
	body = readAll(t, resp.Body)
	ra := resp.Header.Get("Retry-After")
	if resp.StatusCode != 429 || (ra != "12" && ra != "11") || !strings.Contains(body, `"rate_limit_error"`) {
		t.Fatalf("%d Retry-After %q %s", resp.StatusCode, ra, body)
	}
	if n := len(p.up.requests()); n != 2 {
		t.Fatalf("%d upstream requests, want 2 (the cooling keys are not tried)", n)
	}
}

// chainProviders: p1, p2, p3 at the fake upstream, told apart by key.
const chainProviders = `{"version":2,"providers":{
	"p1":{"base_url":"{UP}/v1","keys":[{"id":"k","secret":"k-p1"}]},
	"p2":{"base_url":"{UP}/v1","keys":[{"id":"k","secret":"k-p2"}]},
	"p3":{"base_url":"{UP}/v1","keys":[{"id":"k","secret":"k-p3"}]}},
	"fallbacks":{"p1/m1":["p2/m2","p3/m3"]}}`

func modelsSeen(u *upstream) []string {
	var out []string
	for _, s := range u.requests() {
		out = append(out, keyOf(s.Header)+":"+modelIn(s.Body))
	}
	return out
}

func modelIn(body []byte) string {
	_, rest, _ := strings.Cut(string(body), `"model":"`)
	m, _, _ := strings.Cut(rest, `"`)
	return m
}

// TestFallbackThroughTwoTargets: p1 overloaded, p2 failing, p3 answers,
// streamed or not; each target gets its own model; the audit log has a
// fallback event per step and the response names p3's model.
func TestFallbackThroughTwoTargets(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			p := newPodWith(t, chainProviders)
			p.up.setHandler(keyed(map[string][2]string{"k-p1": {"503", ""}, "k-p2": {"500", ""}}, defaultProvider))
			body := strings.Replace(requestBody(formatOpenAI, "p1", stream), "p1/gpt-fake", "p1/m1", 1)
			resp := p.post(t, pathChat, body)
			out := readAll(t, resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(out, "hello") {
				t.Fatalf("%d %s", resp.StatusCode, out)
			}
			if got := strings.Join(modelsSeen(p.up), ","); got != "k-p1:m1,k-p2:m2,k-p3:m3" {
				t.Fatalf("sent %s", got)
			}
			ev := p.audit.waitEvent(t, audit.TypeResponse)
			if ev.FallbackFrom != "p1/m1" || ev.Model != "p3/m3" || ev.FallbackReason != ReasonServerError {
				t.Fatalf("response event %+v", ev)
			}
			var steps []string
			for _, e := range p.audit.events(t) {
				if e.Type == audit.TypeFallback {
					steps = append(steps, e.FallbackFrom+">"+e.Model+":"+e.FallbackReason)
				}
			}
			if strings.Join(steps, " ") != "p1/m1>p2/m2:overloaded p2/m2>p3/m3:server_error" {
				t.Fatalf("fallback events %v", steps)
			}
		})
	}
}

// TestNoFallbackAfterFirstByte: a stream that broke after its first
// event is not sent again: the runner gets the in-band error, and the
// fallback is never called.
func TestNoFallbackAfterFirstByte(t *testing.T) {
	p := newPodWith(t, chainProviders)
	p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
		if keyOf(r.Header) != "k-p1" {
			defaultProvider(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", openAIStream[0])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection breaks mid-stream
	})
	body := strings.Replace(requestBody(formatOpenAI, "p1", true), "p1/gpt-fake", "p1/m1", 1)
	resp := p.post(t, pathChat, body)
	out := readAll(t, resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(out, "chatcmpl-2") || !strings.Contains(out, "error") {
		t.Fatalf("%d %s, want the first event and an in-band error", resp.StatusCode, out)
	}
	if got := strings.Join(modelsSeen(p.up), ","); got != "k-p1:m1" {
		t.Fatalf("sent %s, want p1 only", got)
	}
}

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestCircuitOpensAndCloses: after CLLAMA_CIRCUIT_FAILURES failures the
// provider's circuit opens: requests go straight to the fallback without
// reaching it, until CLLAMA_CIRCUIT_OPEN has passed (an injected clock);
// then one probe reaches it, and its answer closes the circuit.
func TestCircuitOpensAndCloses(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	p := newPodWith(t, chainProviders, func(c *Config, o *Options) {
		c.CircuitFailures, c.CircuitOpen = 2, 30*time.Second
		o.Now = clock.now
	})
	var mu sync.Mutex
	p1Down := true
	p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		down := p1Down
		mu.Unlock()
		if keyOf(r.Header) == "k-p1" && down {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defaultProvider(w, r)
	})
	body := strings.Replace(requestBody(formatOpenAI, "p1", false), "p1/gpt-fake", "p1/m1", 1)
	ask := func() {
		t.Helper()
		resp := p.post(t, pathChat, body)
		if out := readAll(t, resp.Body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
	}
	p1Calls := func() int {
		n := 0
		for _, k := range keysSeen(p.up) {
			if k == "k-p1" {
				n++
			}
		}
		return n
	}
	ask()
	ask()
	if p1Calls() != 2 {
		t.Fatalf("p1 called %d times, want 2", p1Calls())
	}
	ask() // the circuit is open: p2 only
	if p1Calls() != 2 {
		t.Fatalf("p1 called while its circuit is open")
	}
	if st := circuitOf(p, "p1"); st != 1 {
		t.Fatalf("circuit state %d, want 1 (open)", st)
	}
	clock.add(30 * time.Second)
	mu.Lock()
	p1Down = false
	mu.Unlock()
	ask() // the probe
	if p1Calls() != 3 {
		t.Fatalf("p1 called %d times, want the probe", p1Calls())
	}
	if st := circuitOf(p, "p1"); st != 0 {
		t.Fatalf("circuit state %d after a good probe, want 0 (closed)", st)
	}
	n := len(p.up.requests())
	ask()
	if got := p.up.requests()[n:]; len(got) != 1 || keyOf(got[0].Header) != "k-p1" {
		t.Fatalf("after the circuit closed the request went to %v", keysSeen(p.up)[n:])
	}
}

func circuitOf(p *pod, provider string) int {
	for _, ps := range p.srv.KeyPools().Snapshot() {
		if ps.Provider == provider {
			return int(ps.Circuit)
		}
	}
	return -1
}

// TestKeyStateSurvivesRestart: a key found dead stays dead for a cllama
// started again on the same state directory and providers.json.
func TestKeyStateSurvivesRestart(t *testing.T) {
	p := newPodWith(t, poolProviders)
	p.up.setHandler(keyed(map[string][2]string{"k-a": {"401", ""}}, defaultProvider))
	resp := p.post(t, pathChat, requestBody(formatOpenAI, "pool", false))
	io.Copy(io.Discard, resp.Body)
	if err := p.srv.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := New(p.srv.Config(), Options{AgentCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for _, ps := range again.KeyPools().Snapshot() {
		if ps.Provider == "pool" {
			if ps.Keys[0].ID != "a" || ps.Keys[0].State != 2 {
				t.Fatalf("after a restart key a is %+v, want dead (2)", ps.Keys[0])
			}
			return
		}
	}
	t.Fatal("no pool provider")
}

// TestFallbackOnConnectionErrorAndTimeout: a provider that cannot be
// reached, or sends no headers within the first-byte timeout, falls back;
// and Anthropic's overloaded 529 cools the key like a 429.
func TestFallbackOnConnectionErrorAndTimeout(t *testing.T) {
	t.Run("connection", func(t *testing.T) {
		p := newPodWith(t, strings.Replace(chainProviders, `"p1":{"base_url":"{UP}/v1"`, `"p1":{"base_url":"http://127.0.0.1:1/v1"`, 1))
		resp := p.post(t, pathChat, strings.Replace(requestBody(formatOpenAI, "p1", false), "p1/gpt-fake", "p1/m1", 1))
		if out := readAll(t, resp.Body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		if got := strings.Join(modelsSeen(p.up), ","); got != "k-p2:m2" {
			t.Fatalf("sent %s", got)
		}
		if ev := p.audit.waitEvent(t, audit.TypeResponse); ev.FallbackReason != ReasonConnection {
			t.Fatalf("response event %+v", ev)
		}
	})
	t.Run("first-byte timeout", func(t *testing.T) {
		p := newPodWith(t, chainProviders, func(c *Config, _ *Options) { c.FirstByteTimeout = 200 * time.Millisecond })
		p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
			if keyOf(r.Header) == "k-p1" {
				<-r.Context().Done() // never answers
				return
			}
			defaultProvider(w, r)
		})
		resp := p.post(t, pathMessages, strings.Replace(requestBody(formatAnthropic, "p1", true), "p1/claude-fake", "p1/m1", 1))
		if out := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(out, "message_stop") {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		if ev := p.audit.waitEvent(t, audit.TypeResponse); ev.FallbackReason != ReasonTimeout || ev.Model != "p2/m2" {
			t.Fatalf("response event %+v", ev)
		}
	})
	t.Run("529 cools the key", func(t *testing.T) {
		p := newPodWith(t, poolProviders)
		p.up.setHandler(keyed(map[string][2]string{"k-a": {"529", ""}}, defaultProvider))
		resp := p.post(t, pathMessages, requestBody(formatAnthropic, "poolant", false))
		if out := readAll(t, resp.Body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		if got := strings.Join(keysSeen(p.up), ","); got != "k-a,k-b" {
			t.Fatalf("keys sent %s", got)
		}
	})
}

// TestKeyAlertsReachTheWebhook: a limited key and a dead one reach the
// pod's webhook, signed, naming the provider and the key's id, never its
// secret.
func TestKeyAlertsReachTheWebhook(t *testing.T) {
	const secret = "hook-secret"
	got := make(chan map[string]any, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !alerts.Verify(secret, body, r.Header.Get(alerts.SignatureHeader)) {
			t.Errorf("bad signature on %s", body)
		}
		if strings.Contains(string(body), "k-a") || strings.Contains(string(body), "k-b") {
			t.Errorf("an alert carries a secret: %s", body)
		}
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		got <- ev
	}))
	defer hook.Close()
	wh := alerts.NewWebhook(&manifest.Alerts{Webhook: hook.URL, Secret: secret}, "test-pod", alerts.Options{})
	defer wh.Close()
	p := newPodWith(t, poolProviders, func(_ *Config, o *Options) { o.Alerts = wh })
	p.up.setHandler(keyed(map[string][2]string{"k-a": {"429", "30"}}, defaultProvider))
	resp := p.post(t, pathChat, requestBody(formatOpenAI, "pool", false))
	io.Copy(io.Discard, resp.Body)
	ev := <-got
	if ev["event"] != "key_cooldown" || ev["provider"] != "pool" || ev["key"] != "a" || ev["pod"] != "test-pod" {
		t.Fatalf("alert %v", ev)
	}
}
