package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clawdapus/clawgo/internal/testproc"
)

// tradeDesk is the service behind a held mediated tool: it records the
// body of every call it receives.
type tradeDesk struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls [][]byte
}

func newTradeDesk(t *testing.T) *tradeDesk {
	d := &tradeDesk{}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.calls = append(d.calls, body)
		d.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"filled":500,"order":"ord-7731"}`)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *tradeDesk) received() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]byte(nil), d.calls...)
}

// tradingProvider is a scripted model: asked with no tool result yet, it
// calls desk.trade for 500 ACME; given the tool's result, it answers with
// that result quoted.
func tradingProvider(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		usage := `"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}`
		for _, m := range req.Messages {
			if m.Role != "tool" {
				continue
			}
			var text string
			if json.Unmarshal(m.Content, &text) != nil {
				text = string(m.Content)
			}
			answer, _ := json.Marshal("Trade placed. The desk said: " + text)
			fmt.Fprintf(w, `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],%s}`, answer, usage)
			return
		}
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"t1","type":"function","function":{"name":"desk__trade","arguments":"{\"symbol\":\"ACME\",\"qty\":500,\"side\":\"buy\"}"}}]},"finish_reason":"tool_calls"}],%s}`, usage)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The console approves a real held call: a runner's mediated turn makes
// the model call desk.trade, which needs a person's approval; the operator
// logs in to the console in a real headless Chromium, sees the call on
// /approvals with its arguments and clicks Approve; the tool runs with
// exactly the arguments shown, and the runner's turn completes with the
// tool's result in its answer. Nothing runs before the click.
func TestBrowserApprovesARealHeldCall(t *testing.T) {
	ctx := testproc.Browser(t)
	desk := newTradeDesk(t)
	up := tradingProvider(t)
	p := startMCPPodWith(t, func(ctxDir, _, _ string) {
		write(t, filepath.Join(ctxDir, "analyst", "tools.json"), fmt.Sprintf(`{"version":1,"tools":[
 {"name":"desk.trade","mode":"mediated","description":"place a trade",
  "inputSchema":{"type":"object","properties":{"symbol":{"type":"string"},"qty":{"type":"integer"},"side":{"type":"string"}},"required":["symbol","qty"]},
  "approve":[{"always":true,"source":"claw-pod.yml x-claw.tools[0].approve"}],
  "execution":{"transport":"http","service":"desk","base_url":%q,"method":"POST","path":"/trade"}}]}`, desk.srv.URL))
	}, "CLLAMA_ADMIN_ADDR=127.0.0.1:0", "CLLAMA_ADMIN_TOKEN="+testOperatorToken, "OPENAI_BASE_URL="+up.URL+"/v1")
	admin := adminURL(t, p)

	// The runner: one mediated turn, which waits on the held call.
	type answer struct {
		status int
		body   string
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, p.base+"/v1/chat/completions",
			strings.NewReader(`{"model":"openai/gpt-test","messages":[{"role":"user","content":"buy 500 ACME"}]}`))
		req.Header.Set("Authorization", "Bearer analyst:s3cret")
		req.Header.Set("Content-Type", "application/json")
		res, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		done <- answer{status: res.StatusCode, body: string(b)}
	}()

	run := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	row := `#approvals tr[data-approval]`
	run(
		chromedp.Navigate(admin+"/approvals"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testOperatorToken),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("agents")),
	)
	// The held call appears (the page is reloaded until the turn reached it).
	var id string
	for deadline := time.Now().Add(30 * time.Second); id == "" && time.Now().Before(deadline); {
		run(chromedp.Navigate(admin+"/approvals"), chromedp.WaitVisible(chromedp.ID("approvals")))
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("`+row+`") || {dataset: {}}).dataset.approval || ""`))
		if err != nil {
			t.Fatal(err)
		}
		if id = v; id == "" {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if id == "" {
		t.Fatal("the held call never reached the approvals page")
	}
	shown, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-approval="`+id+`"] pre`)))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-approval="`+id+`"]`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cells, "analyst") || !strings.Contains(cells, "desk.trade") {
		t.Fatalf("the pending row says %q", cells)
	}
	var shownArgs map[string]any
	if err := json.Unmarshal([]byte(shown), &shownArgs); err != nil || shownArgs["symbol"] != "ACME" || shownArgs["qty"] != float64(500) {
		t.Fatalf("arguments shown %q (%v)", shown, err)
	}
	select {
	case a := <-done:
		t.Fatalf("the runner's turn ended before a decision: %+v", a)
	default:
	}
	if n := len(desk.received()); n != 0 {
		t.Fatalf("the tool ran %d times before the approval", n)
	}

	run(
		chromedp.Click(chromedp.CSS(`tr[data-approval="`+id+`"] button.approve`)),
		chromedp.WaitNotPresent(chromedp.CSS(`tr[data-approval="`+id+`"]`)),
	)
	var a answer
	select {
	case a = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the runner's turn did not complete after the approval")
	}
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("runner: %d %v\n%s", a.status, a.err, a.body)
	}
	var res struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(a.body), &res); err != nil || len(res.Choices) != 1 ||
		!strings.Contains(res.Choices[0].Message.Content, "ord-7731") {
		t.Fatalf("the runner's answer does not carry the tool's result: %s", a.body)
	}
	calls := desk.received()
	if len(calls) != 1 {
		t.Fatalf("the tool ran %d times, want once", len(calls))
	}
	var ran map[string]any
	if err := json.Unmarshal(calls[0], &ran); err != nil {
		t.Fatalf("the tool received %q: %v", calls[0], err)
	}
	want, _ := json.Marshal(shownArgs)
	got, _ := json.Marshal(ran)
	if !bytes.Equal(got, want) {
		t.Fatalf("the tool received %s, the operator approved %s", got, want)
	}
	if audit := p.audit.String(); !strings.Contains(audit, `"decision":"approved","by":"console:`) {
		t.Fatalf("no approval by the console in the audit:\n%s", audit)
	}
}
