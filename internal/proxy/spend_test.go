package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/spend"
	wireopenai "github.com/clawdapus/clawgo/internal/wire/openai"
)

// The pod's prices of the fake models: gpt-fake as gpt-4o ($2.50 in,
// $1.25 cached, $10 out per 1M), claude-fake as Claude Sonnet 4.5 ($3
// in, $0.30 cache read, $3.75 cache write, $15 out).
var testPricing = map[string]manifest.Price{
	"fake/gpt-fake":       {Input: 2_500_000, CachedInput: 1_250_000, CacheWrite: 2_500_000, Output: 10_000_000},
	"fakeant/claude-fake": {Input: 3_000_000, CachedInput: 300_000, CacheWrite: 3_750_000, Output: 15_000_000},
}

func withPricing(_ *Config, o *Options) { o.Spend.Pricing = testPricing }

// The scripted usage and what it costs, by hand:
//   - OpenAI chat and Responses: 10,000 prompt tokens of which 8,000
//     cached, 1,000 output (300 reasoning, inside the 1,000):
//     2,000 × 2.50 + 8,000 × 1.25 + 1,000 × 10 = 25,000 µUSD = $0.025.
//   - Anthropic: 1,000 input, 2,000 cache read, 4,000 cache write, 500
//     output: 3,000 + 600 + 15,000 + 7,500 = 26,100 µUSD = $0.0261.
const (
	chatUsage      = `{"prompt_tokens":10000,"completion_tokens":1000,"total_tokens":11000,"prompt_tokens_details":{"cached_tokens":8000},"completion_tokens_details":{"reasoning_tokens":300}}`
	anthropicUsage = `{"input_tokens":1000,"cache_read_input_tokens":2000,"cache_creation_input_tokens":4000,"output_tokens":500}`
	responsesUsage = `{"input_tokens":10000,"output_tokens":1000,"total_tokens":11000,"input_tokens_details":{"cached_tokens":8000},"output_tokens_details":{"reasoning_tokens":300}}`
	chatCost       = 25_000
	anthropicCost  = 26_100
)

// chatChunks are a chat completion stream's chunks as a provider sends
// them: with the usage asked for, "usage":null in each and a usage chunk
// before [DONE].
func chatChunks(askedUsage bool) string {
	deltas := []string{`{"role":"assistant","content":""}`, `{"content":"hello"}`, `{}`}
	var b strings.Builder
	for i, d := range deltas {
		finish := "null"
		if i == len(deltas)-1 {
			finish = `"stop"`
		}
		chunk := `{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-fake","choices":[{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}]`
		if askedUsage {
			chunk += `,"usage":null`
		}
		b.WriteString("data: " + chunk + "}\n\n")
	}
	if askedUsage {
		b.WriteString(`data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"gpt-fake","choices":[],"usage":` + chatUsage + "}\n\n")
	}
	return b.String() + "data: [DONE]\n\n"
}

// pricedProvider answers every endpoint with the scripted usage.
func pricedProvider(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	switch r.URL.Path {
	case "/v1/chat/completions":
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, chatChunks(wireopenai.StreamUsageRequested(body)))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":"hello there","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":`+chatUsage+`}`)
	case "/v1/messages":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-fake","content":[{"type":"text","text":"hello there"}],"stop_reason":"end_turn","stop_sequence":null,"usage":`+anthropicUsage+`}`)
	case "/v1/responses":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"resp_1","object":"response","created_at":1700000000,"status":"completed","model":"gpt-fake","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hello there","annotations":[]}]}],"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"store":false,"usage":`+responsesUsage+`}`)
	default:
		http.NotFound(w, r)
	}
}

// setBudget gives alice a budget in her metadata.json.
func (p *pod) setBudget(t *testing.T, b ...manifest.Budget) {
	t.Helper()
	md, _ := json.Marshal(manifest.Metadata{Token: aliceToken, Pod: "test-pod", Budget: b})
	writeFile(t, filepath.Join(p.root, "alice", "metadata.json"), string(md))
}

// costs are the cost_usd of the audit events of typ, in order.
func (p *pod) costs(t *testing.T, typ string) []audit.Cost {
	var out []audit.Cost
	for _, e := range p.audit.events(t) {
		if e.Type == typ {
			out = append(out, e.CostUSD)
		}
	}
	return out
}

func historyEntries(t *testing.T, p *pod) []history.Entry {
	t.Helper()
	_ = p.history.Close()
	raw, err := os.ReadFile(filepath.Join(p.historyDir, "alice", "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []history.Entry
	for _, ln := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e history.Entry
		if err := json.Unmarshal([]byte(ln), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// Both official SDKs and the Responses API: each exchange's cost is the
// hand-computed figure of its scripted usage, cached tokens included, in
// the audit event and the history entry.
func TestCostOfEachFormatWithTheSDKs(t *testing.T) {
	p := newPod(t, withPricing, func(_ *Config, o *Options) { o.Spend.Pricing = testPricing })
	p.up.setHandler(pricedProvider)
	ctx := context.Background()
	oc := oc(p)
	if _, err := oc.Chat.Completions.New(ctx, openAIParams("fake/gpt-fake")); err != nil {
		t.Fatal(err)
	}
	if _, err := ac(p).Messages.New(ctx, anthropicParams("fakeant/claude-fake")); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.Responses.New(ctx, responses.ResponseNewParams{Model: "fake/gpt-fake", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}); err != nil {
		t.Fatal(err)
	}
	want := []audit.Cost{audit.KnownCost(chatCost), audit.KnownCost(anthropicCost), audit.KnownCost(chatCost)}
	if got := p.costs(t, audit.TypeResponse); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("response events cost %v, want %v", got, want)
	}
	entries := historyEntries(t, p)
	if len(entries) != 3 {
		t.Fatalf("%d history entries", len(entries))
	}
	for i, e := range entries {
		if e.CostUSD != want[i] || e.CostUnknown {
			t.Errorf("entry %d (%s) cost %+v, want %+v", i, e.Format, e.CostUSD, want[i])
		}
	}
	raw, _ := os.ReadFile(filepath.Join(p.historyDir, "alice", "history.jsonl"))
	if !strings.Contains(string(raw), `"cost_usd":0.025}`) || !strings.Contains(string(raw), `"cost_usd":0.0261}`) {
		t.Fatalf("history lines do not carry the costs in dollars:\n%s", raw)
	}
}

// A model with no price: cost_usd null and cost_unknown true.
func TestUnpricedModelCostIsUnknown(t *testing.T) {
	p := newPod(t)
	p.up.setHandler(pricedProvider)
	if _, err := oc(p).Chat.Completions.New(context.Background(), openAIParams("fake/gpt-fake")); err != nil {
		t.Fatal(err)
	}
	ev := p.audit.waitEvent(t, audit.TypeResponse)
	if !ev.CostUnknown || !ev.CostUSD.Unknown() {
		t.Fatalf("response event %+v", ev)
	}
	entries := historyEntries(t, p)
	raw, _ := os.ReadFile(filepath.Join(p.historyDir, "alice", "history.jsonl"))
	if len(entries) != 1 || !strings.Contains(string(raw), `"cost_usd":null,"cost_unknown":true`) {
		t.Fatalf("history: %s", raw)
	}
	// Under a USD budget it is refused: its spend could not be held.
	p = newPod(t)
	p.up.setHandler(pricedProvider)
	p.setBudget(t, manifest.Budget{Unit: "usd", Limit: 1_000_000, Per: "day"})
	_, err := oc(p).Chat.Completions.New(context.Background(), openAIParams("fake/gpt-fake"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 403 || !strings.Contains(oe.RawJSON(), `"type":"budget_unenforceable"`) ||
		!strings.Contains(oe.Message, "fake/gpt-fake") || !strings.Contains(oe.Message, "x-claw.cllama-defaults.pricing") {
		t.Fatalf("unpriced model under a USD budget: %v", err)
	}
	if len(p.up.requests()) != 0 {
		t.Fatal("the refused request reached the provider")
	}
}

// A streamed chat request of a runner that did not ask for usage: cllama
// asks upstream and costs it, and the runner's stream is byte for byte
// the one the provider sends a request that does not ask.
func TestStreamedChatIsCostedAndUnchanged(t *testing.T) {
	p := newPod(t, withPricing)
	p.up.setHandler(pricedProvider)
	resp := p.post(t, pathChat, `{"model":"fake/gpt-fake","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if got := readAll(t, resp.Body); got != chatChunks(false) {
		t.Fatalf("runner's stream\n%q\nwant\n%q", got, chatChunks(false))
	}
	if up := p.up.requests(); len(up) != 1 || !wireopenai.StreamUsageRequested(up[0].Body) {
		t.Fatalf("usage not asked for upstream: %s", up[0].Body)
	}
	ev := p.audit.waitEvent(t, audit.TypeResponse)
	if ev.CostUSD != audit.KnownCost(chatCost) || *ev.TokensIn != 10000 {
		t.Fatalf("response event %+v", ev)
	}
	// A runner that asks gets the usage chunk, as the provider sent it.
	c := openAIClient(p, aliceToken)
	params := openAIParams("fake/gpt-fake")
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if stream.Err() != nil || acc.Usage.PromptTokens != 10000 || acc.Usage.PromptTokensDetails.CachedTokens != 8000 {
		t.Fatalf("%v %+v", stream.Err(), acc.Usage)
	}
	for deadline := time.Now().Add(5 * time.Second); len(p.costs(t, audit.TypeResponse)) < 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // the event follows the stream's last byte
	}
	if got := p.costs(t, audit.TypeResponse); len(got) != 2 || got[1] != audit.KnownCost(chatCost) {
		t.Fatalf("costs %v", got)
	}
}

// budgetError decodes the error object of a refusal.
type budgetError struct {
	Type     string          `json:"type"`
	Message  string          `json:"message"`
	Scope    string          `json:"scope"`
	Unit     string          `json:"unit"`
	Per      string          `json:"per"`
	Limit    json.RawMessage `json:"limit"`
	Spent    json.RawMessage `json:"spent"`
	ResetsAt string          `json:"resets_at"`
}

func (b budgetError) check(t *testing.T, what, unit, limit, spent string) {
	t.Helper()
	if b.Type != "budget_exceeded" || b.Scope != "agent" || b.Unit != unit || b.Per != "day" || string(b.Limit) != limit ||
		string(b.Spent) != spent || b.ResetsAt == "" || !strings.Contains(b.Message, "x-claw.budget") {
		t.Fatalf("%s: %+v", what, b)
	}
}

// 402 budget_exceeded, in each format, before a byte: the official SDKs
// raise it with its fields; the provider is not called.
func TestBudgetRefusesInEachFormat(t *testing.T) {
	ctx := context.Background()
	type call func(p *pod) (status int, raw string, header http.Header, err error)
	calls := map[string]call{
		"openai": func(p *pod) (int, string, http.Header, error) {
			_, err := oc(p).Chat.Completions.New(ctx, openAIParams("fake/gpt-fake"))
			var oe *openai.Error
			if errors.As(err, &oe) {
				return oe.StatusCode, oe.RawJSON(), oe.Response.Header, nil
			}
			return 0, "", nil, err
		},
		"anthropic": func(p *pod) (int, string, http.Header, error) {
			_, err := ac(p).Messages.New(ctx, anthropicParams("fakeant/claude-fake"))
			var ae *anthropic.Error
			if errors.As(err, &ae) {
				return ae.StatusCode, ae.RawJSON(), ae.Response.Header, nil
			}
			return 0, "", nil, err
		},
		"responses": func(p *pod) (int, string, http.Header, error) {
			_, err := oc(p).Responses.New(ctx, responses.ResponseNewParams{Model: "fake/gpt-fake", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
			var oe *openai.Error
			if errors.As(err, &oe) {
				return oe.StatusCode, oe.RawJSON(), oe.Response.Header, nil
			}
			return 0, "", nil, err
		},
	}
	for name, do := range calls {
		t.Run(name, func(t *testing.T) {
			p := newPod(t, withPricing)
			p.up.setHandler(pricedProvider)
			p.setBudget(t, manifest.Budget{Unit: "requests", Limit: 1, Per: "day"})
			if status, raw, _, err := do(p); err != nil || status != 0 {
				t.Fatalf("first request: %d %s %v", status, raw, err)
			}
			status, raw, h, err := do(p)
			if err != nil || status != http.StatusPaymentRequired || h.Get("Retry-After") == "" {
				t.Fatalf("second request: %d %s %v", status, raw, err)
			}
			var body struct {
				Error budgetError `json:"error"`
			}
			if err := json.Unmarshal([]byte(raw), &body); err != nil || body.Error.Type == "" {
				// The OpenAI SDK's RawJSON is the error object itself.
				_ = json.Unmarshal([]byte(raw), &body.Error)
			}
			body.Error.check(t, name, "requests", "1", "1")
			if n := len(p.up.requests()); n != 1 {
				t.Fatalf("the provider saw %d requests", n)
			}
			ev := p.audit.waitEvent(t, audit.TypeBudgetExceeded)
			if ev.ClawID != "alice" || ev.Budget == nil || ev.Budget.Unit != "requests" {
				t.Fatalf("budget_exceeded event %+v", ev)
			}
		})
	}
}

// 50 requests at once at the edge of a USD limit: the spend ends past it
// by at most one request's cost.
func TestFiftyConcurrentRequestsAtTheEdgeOfAUSDLimit(t *testing.T) {
	p := newPod(t, withPricing, func(c *Config, _ *Options) { c.MaxAgentConcurrency, c.MaxQueuedPerAgent = 64, 64 })
	p.up.setHandler(pricedProvider)
	const limit = 100_000 // $0.10: four calls of $0.025
	p.setBudget(t, manifest.Budget{Unit: "usd", Limit: limit, Per: "day"})
	// A prompt of 10,000 bytes (the scripted 10,000 tokens): no text has
	// more tokens than bytes.
	body := `{"model":"fake/gpt-fake","max_tokens":1000,"messages":[{"role":"user","content":"` + strings.Repeat("x", 10_000) + `"}]}`
	var wg sync.WaitGroup
	start := make(chan struct{})
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest(http.MethodPost, p.front.URL+pathChat, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	var spent int64
	for _, c := range p.costs(t, audit.TypeResponse) {
		spent += c.MicroUSD
	}
	if spent > limit+chatCost || statuses[200]+statuses[402] != 50 || statuses[402] == 0 {
		t.Fatalf("spent %d µUSD against %d; statuses %v", spent, limit, statuses)
	}
	t.Logf("50 at once: %v, spent $%s of $%s", statuses, audit.FormatUSD(spent), audit.FormatUSD(limit))
}

// Spend survives a restart: a second cllama on the same state directory
// refuses what the first spent.
func TestSpendSurvivesARestart(t *testing.T) {
	state := t.TempDir()
	withState := func(c *Config, _ *Options) { c.StateDir = state }
	p := newPod(t, withPricing, withState)
	p.up.setHandler(pricedProvider)
	p.setBudget(t, manifest.Budget{Unit: "tokens", Limit: 11_000, Per: "month"})
	if _, err := oc(p).Chat.Completions.New(context.Background(), openAIParams("fake/gpt-fake")); err != nil {
		t.Fatal(err)
	}
	p.srv.Close()
	q := newPod(t, withPricing, withState)
	q.up.setHandler(pricedProvider)
	q.setBudget(t, manifest.Budget{Unit: "tokens", Limit: 11_000, Per: "month"})
	_, err := oc(q).Chat.Completions.New(context.Background(), openAIParams("fake/gpt-fake"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 402 {
		t.Fatalf("after a restart: %v", err)
	}
}

var _ = spend.DefaultOutputTokens

func oc(p *pod) *openai.Client {
	c := openAIClient(p, aliceToken)
	return &c
}

func ac(p *pod) *anthropic.Client {
	c := anthropicClient(p, aliceToken)
	return &c
}

// sinkRecorder is an alerts.Sink that keeps what it is sent.
type sinkRecorder struct {
	mu     sync.Mutex
	events []string
	fields []map[string]any
}

func (s *sinkRecorder) Alert(event string, fields map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, event)
	s.fields = append(s.fields, fields)
}

// Refusals and soft-limit warnings go to the pod's alert webhook, a
// handful per budget however many requests are refused.
func TestBudgetAlerts(t *testing.T) {
	sink := &sinkRecorder{}
	p := newPod(t, withPricing, func(_ *Config, o *Options) { o.Alerts = sink })
	p.up.setHandler(pricedProvider)
	p.setBudget(t, manifest.Budget{Unit: "requests", Limit: 2, Per: "day", Soft: 0.5})
	for i := 0; i < 10; i++ {
		_, _ = oc(p).Chat.Completions.New(context.Background(), openAIParams("fake/gpt-fake"))
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	warnings, refusals := 0, 0
	for i, e := range sink.events {
		switch e {
		case "budget_warning":
			warnings++
		case "budget_exceeded":
			refusals++
			if f := sink.fields[i]; f["agent"] != "alice" || f["unit"] != "requests" || f["resets_at"] == nil {
				t.Errorf("alert fields %v", f)
			}
		}
	}
	if warnings != 1 || refusals == 0 || refusals > 3 {
		t.Fatalf("alerts %v: want one warning and a handful of refusals (8 were refused)", sink.events)
	}
}

// A call a fallback target answered is costed at the target's price, not
// at the price of the model it was admitted for.
func TestFallbackAnswerIsCostedAtTheTargetsPrice(t *testing.T) {
	prices := func(_ *Config, o *Options) {
		o.Spend.Pricing = map[string]manifest.Price{
			"p1/m1": {Input: 1_000_000, Output: 1_000_000},     // $1 / 1M
			"p2/m2": {Input: 100_000_000, Output: 100_000_000}, // $100 / 1M
		}
	}
	p := newPodWith(t, chainProviders, prices)
	p.up.setHandler(keyed(map[string][2]string{"k-p1": {"503", ""}}, defaultProvider))
	body := strings.Replace(requestBody(formatOpenAI, "p1", false), "p1/gpt-fake", "p1/m1", 1)
	resp := p.post(t, pathChat, body)
	if out := readAll(t, resp.Body); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	ev := p.audit.waitEvent(t, audit.TypeResponse)
	// 11 prompt + 3 completion tokens at $100 per 1M: 1,400 µUSD (at
	// p1/m1's price it would be 14).
	if ev.FallbackFrom != "p1/m1" || !ev.CostUSD.Known || ev.CostUSD.MicroUSD != 1_400 {
		t.Fatalf("response event: from %q cost %+v, want p2/m2's price: 1400 µUSD", ev.FallbackFrom, ev.CostUSD)
	}
}
