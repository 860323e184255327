package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// consoleClient logs in to the console at admin with token and returns a
// client holding the session.
func consoleClient(t *testing.T, admin, token string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	page := consoleGet(t, c, admin+"/login")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("login page:\n%s", page)
	}
	res, err := c.PostForm(admin+"/login", url.Values{"csrf": {m[1]}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Request.URL.Path != "/" {
		t.Fatalf("login ended at %s (%d)", res.Request.URL, res.StatusCode)
	}
	return c
}

// analystTurn sends analyst's request for one mediated turn to the
// cllama at base and fails the test unless it is answered 200.
func analystTurn(t *testing.T, base string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"openai/gpt-test","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer analyst:s3cret")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("mediated turn: %v %v", res, err)
	}
	res.Body.Close()
}

func consoleGet(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", u, res.StatusCode, b)
	}
	return string(b)
}

// A real cllama with request and token budgets on an agent and a request
// budget on the pod: after one mediated turn (two model calls) the console
// shows each budget's current window as the meter counted it.
func TestConsoleShowsRequestAndTokenBudgets(t *testing.T) {
	up := fakeProvider(t)
	p := startMCPPodWith(t, func(ctxDir, authDir, _ string) {
		write(t, filepath.Join(ctxDir, "analyst", "metadata.json"), `{"token":"analyst:s3cret","budget":[`+
			`{"unit":"requests","limit":5,"per":"day"},{"unit":"tokens","limit":20000,"per":"month"},{"unit":"tokens","limit":500,"per":"conversation"}]}`)
		write(t, filepath.Join(authDir, "pod.json"), `{"version":1,"pod":"desk","pod_budget":[{"unit":"requests","limit":1000,"per":"hour"}]}`)
	}, "CLLAMA_ADMIN_ADDR=127.0.0.1:0", "CLLAMA_ADMIN_TOKEN="+testOperatorToken, "OPENAI_BASE_URL="+up.URL+"/v1")
	admin := adminURL(t, p)
	analystTurn(t, p.base)
	c := consoleClient(t, admin, testOperatorToken)
	home := consoleGet(t, c, admin+"/")
	row := regexp.MustCompile(`(?s)<tr data-agent="analyst">.*?</tr>`).FindString(home)
	// The fake provider answers 14 tokens a call; the turn made two.
	for _, want := range []string{">1 request of 5 requests/day<", ">28 tokens of 20,000 tokens/month<", ">1 request of 1,000 requests/hour (pod)<"} {
		if !strings.Contains(row, want) {
			t.Errorf("pod page: want %q in analyst's row:\n%s", want, row)
		}
	}
	page := consoleGet(t, c, admin+"/agents/analyst")
	for _, want := range []string{
		`<tr data-budget="agent/requests/day"><td>agent</td><td>requests</td><td>day</td><td class="num budget">1 request</td><td class="num">5 requests</td>`,
		`<tr data-budget="agent/tokens/month"><td>agent</td><td>tokens</td><td>month</td><td class="num budget">28 tokens</td><td class="num">20,000 tokens</td>`,
		`<tr data-budget="pod/requests/hour"><td>pod</td><td>requests</td><td>hour</td><td class="num budget">1 request</td><td class="num">1,000 requests</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("agent page: want %q in\n%s", want, regexp.MustCompile(`(?s)<table id="budgets">.*?</table>`).FindString(page))
		}
	}
	if strings.Contains(page, "agent/tokens/conversation") {
		t.Error("a per-conversation budget is shown with a window")
	}
}
