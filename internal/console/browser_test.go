package console

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/testproc"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write docs/console/*.png from the seeded pod")

// browser starts a headless Chromium for the test (testproc.Browser), or
// skips it when there is none.
func browser(t *testing.T) context.Context {
	t.Helper()
	return testproc.Browser(t)
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func value[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// until waits for a JavaScript condition to hold on the page.
func until(expr string) chromedp.Action[chromedp.Void] { return chromedp.Poll[chromedp.Void](expr) }

func logIn(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	do(t, ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("login")),
	)
}

func TestBrowserLoginAgentsTurnAndLogout(t *testing.T) {
	ctx := browser(t)
	r := newRig(t, nil)
	logIn(t, ctx, r.srv.URL, operatorToken)
	do(t, ctx, chromedp.WaitVisible(chromedp.ID("agents")))
	agents := value(t, ctx, chromedp.Text(chromedp.ID("agents")))
	for _, id := range []string{"analyst", "trader", "helper"} {
		if !strings.Contains(agents, id) {
			t.Fatalf("agent %s not listed:\n%s", id, agents)
		}
	}
	// Open an agent, then its turn with hidden rounds.
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`a[href="/agents/analyst"]`)),
		chromedp.WaitVisible(chromedp.ID("turns")),
		chromedp.Click(chromedp.CSS(`a[href="/turns/`+roundTurn+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("h2.round")),
	)
	rounds := value(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("h2.round")).map(e => e.textContent)`))
	bars := value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.timeline rect.call").length`))
	if strings.Join(rounds, "|") != "Hidden round 1|Hidden round 2" || bars != 3 {
		t.Fatalf("turn page: rounds %q, %d timeline bars", rounds, bars)
	}
	// Log out: the pages are closed again.
	do(t, ctx, chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("token")))
	do(t, ctx, chromedp.Navigate(r.srv.URL+"/agents/analyst"), chromedp.WaitVisible(chromedp.ID("token")))
	if loc := value(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/login") {
		t.Fatalf("after logout: at %s", loc)
	}
}

func TestBrowserCounterChangesLive(t *testing.T) {
	ctx := browser(t)
	r := newRig(t, nil)
	logIn(t, ctx, r.srv.URL, operatorToken)
	sel := `td[data-live-agent="trader"][data-live-field="requests"]`
	// The page is live once the first update arrived.
	do(t, ctx, chromedp.WaitVisible(chromedp.ID("agents")), until(`document.getElementById("live-status").textContent === "live"`))
	before := value(t, ctx, chromedp.Text(chromedp.CSS(sel)))
	for range 3 {
		r.console.Live().Event(&audit.Event{Type: audit.TypeResponse, ClawID: "trader", StatusCode: 200, TS: time.Now()})
	}
	n, err := strconv.Atoi(strings.TrimSpace(before))
	if err != nil {
		t.Fatalf("counter %q", before)
	}
	do(t, ctx, until(`document.querySelector('`+sel+`').textContent === "`+strconv.Itoa(n+3)+`"`))
}

func TestBrowserHostileOutputExecutesNothing(t *testing.T) {
	ctx := browser(t)
	r := newRig(t, nil)
	logIn(t, ctx, r.srv.URL, operatorToken)
	do(t, ctx,
		chromedp.WaitVisible(chromedp.ID("agents")),
		chromedp.Navigate(r.srv.URL+"/turns/"+hostileTurn),
		chromedp.WaitVisible(chromedp.ID("response")),
		// Let the page settle (an image's error, were there one); the
		// assertion is that nothing ran, not when.
		until(`document.readyState === "complete"`),
		chromedp.Sleep(300*time.Millisecond),
	)
	shown := value(t, ctx, chromedp.Text(chromedp.ID("response")))
	title := value(t, ctx, chromedp.Title())
	pwned := value(t, ctx, chromedp.Evaluate[bool](`window.pwned !== undefined`))
	imgs := value(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("main img, main script").length`))
	if pwned || strings.Contains(title, "pwned") || imgs != 0 {
		t.Fatalf("model output ran: pwned=%v title=%q img/script elements=%d", pwned, title, imgs)
	}
	if !strings.Contains(shown, "<script>") || !strings.Contains(shown, "onerror") {
		t.Fatalf("model output not shown as text: %q", shown)
	}
}

func TestBrowserPostWithoutCSRFRefused(t *testing.T) {
	ctx := browser(t)
	q := &fakeApprovals{pending: []Approval{{ID: "ap1", Agent: "trader", Tool: "desk.trade", Requested: time.Now()}}, decided: map[string]bool{}}
	r := newRig(t, q)
	logIn(t, ctx, r.srv.URL, operatorToken)
	do(t, ctx, chromedp.WaitVisible(chromedp.ID("agents")))
	// The browser has the session cookie; the request lacks the page's token.
	status := value(t, ctx, chromedp.Evaluate[int](`fetch("/approvals/ap1", {method: "POST", body: new URLSearchParams({decision: "approve"})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if status != 403 || len(q.decided) != 0 {
		t.Fatalf("POST without CSRF: %d, decided %v", status, q.decided)
	}
}

func TestBrowserAgentTokenCannotLogIn(t *testing.T) {
	ctx := browser(t)
	r := newRig(t, nil)
	logIn(t, ctx, r.srv.URL, agentToken)
	do(t, ctx, chromedp.WaitVisible(chromedp.ID("login-error")))
	msg := value(t, ctx, chromedp.Text(chromedp.ID("login-error")))
	if !strings.Contains(msg, "not the operator token") {
		t.Fatalf("login error %q", msg)
	}
	do(t, ctx, chromedp.Navigate(r.srv.URL+"/tools"), chromedp.WaitVisible(chromedp.ID("token")))
}

func TestBrowserApproveByClicking(t *testing.T) {
	ctx := browser(t)
	q := &fakeApprovals{pending: []Approval{{ID: "ap1", Agent: "trader", Tool: "desk.trade", Arguments: []byte(`{"symbol":"X","qty":500}`), Requested: time.Now()}}, decided: map[string]bool{}}
	r := newRig(t, q)
	logIn(t, ctx, r.srv.URL, operatorToken)
	do(t, ctx,
		chromedp.WaitVisible(chromedp.ID("agents")),
		chromedp.Navigate(r.srv.URL+"/approvals"),
		chromedp.Click(chromedp.CSS(`tr[data-approval="ap1"] button.approve`)),
		chromedp.WaitNotPresent(chromedp.CSS(`tr[data-approval="ap1"]`)),
	)
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.decided["ap1"] {
		t.Fatalf("not approved: %v", q.decided)
	}
}

// TestScreenshots writes docs/console/*.png from the seeded pod:
// go test ./internal/console -run TestScreenshots -update-screenshots
func TestScreenshots(t *testing.T) {
	if !*updateScreenshots {
		t.Skip("run with -update-screenshots to write docs/console/*.png")
	}
	ctx := browser(t)
	q := &fakeApprovals{pending: []Approval{{ID: "ap_7f3a", Agent: "trader", Tool: "desk.trade", Arguments: []byte(`{"symbol":"ACME","qty":500,"side":"buy"}`),
		Requested: time.Now().Add(-40 * time.Second), Expires: time.Now().Add(4 * time.Minute)}}, decided: map[string]bool{}}
	resets := startOfDay(time.Now()).Add(24 * time.Hour)
	b := fakeBudgets{
		"analyst": {{Scope: "agent", Unit: "usd", Period: "day", Limit: 5_000_000, Spent: 84_600, ResetsAt: resets},
			{Scope: "agent", Unit: "tokens", Period: "day", Limit: 200_000, Spent: 171_250, ResetsAt: resets},
			{Scope: "pod", Unit: "requests", Period: "hour", Limit: 2_000, Spent: 214, ResetsAt: time.Now().Truncate(time.Hour).Add(time.Hour)}},
		"trader": {{Scope: "agent", Unit: "requests", Period: "day", Limit: 20, Spent: 20, ResetsAt: resets},
			{Scope: "pod", Unit: "requests", Period: "hour", Limit: 2_000, Spent: 214, ResetsAt: time.Now().Truncate(time.Hour).Add(time.Hour)}},
	}
	r := newRigWith(t, func(o *Options) { o.Approvals, o.Budgets = q, b })
	for i := range 12 {
		r.console.Live().Event(&audit.Event{Type: audit.TypeResponse, ClawID: []string{"analyst", "trader"}[i%2], StatusCode: 200, TS: time.Now()})
	}
	r.console.Live().Event(&audit.Event{Type: audit.TypeError, ClawID: "analyst", StatusCode: 502, TS: time.Now()})
	r.console.Live().Event(&audit.Event{Type: audit.TypeFeedFetch, ClawID: "analyst", Feed: "market", Status: "ok", TS: time.Now().Add(-25 * time.Second)})
	logIn(t, ctx, r.srv.URL, operatorToken)
	do(t, ctx, chromedp.WaitVisible(chromedp.ID("agents")))
	dir := filepath.Join("..", "..", "docs", "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"agents": "/", "agent": "/agents/analyst", "turn": "/turns/" + roundTurn, "tools": "/tools",
		"approvals": "/approvals", "feeds": "/feeds",
	} {
		do(t, ctx, chromedp.Navigate(r.srv.URL+path), chromedp.WaitVisible(chromedp.CSS("main")),
			until(`Array.from(document.images).every(i => i.complete)`))
		png := value(t, ctx, chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
