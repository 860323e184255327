package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestLoginSessionCookieAndPages(t *testing.T) {
	r := newRig(t, nil)
	c := client()
	// Without a session a page sends the browser to log in.
	resp, _ := get(t, c, r.srv.URL+"/")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("anonymous /: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, csrf := r.login(t, c, operatorToken)
	if csrf == "" {
		t.Fatalf("login refused: %d", resp.StatusCode)
	}
	var sc *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == sessionCookie && ck.Value != "" {
			sc = ck
		}
	}
	if sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || sc.Secure {
		t.Fatalf("session cookie %+v (plain HTTP: not Secure; HttpOnly, SameSite=Strict)", sc)
	}
	for path, want := range map[string]string{
		"/":                   `href="/agents/analyst"`,
		"/agents/analyst":     `href="/turns/` + roundTurn + `"`,
		"/turns/" + roundTurn: "Hidden round 2",
		"/tools":              "desk.trade",
		"/approvals":          "None configured",
		"/feeds":              "market",
	} {
		resp, body := get(t, c, r.srv.URL+path)
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want %q in\n%.2000s", path, resp.StatusCode, want, body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if strings.Contains(body, "<script>") {
			t.Errorf("%s: inline script on the page", path)
		}
	}
	for _, path := range []string{"/charts/requests.svg", "/charts/spend.svg", "/charts/requests.svg?agent=analyst", "/static/console.js"} {
		if resp, _ := get(t, c, r.srv.URL+path); resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
	// Logout needs the CSRF token, then ends the session.
	resp, err := c.PostForm(r.srv.URL+"/logout", url.Values{"csrf": {csrf}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %v %v", resp, err)
	}
	if resp, _ := get(t, c, r.srv.URL+"/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after logout /: %d", resp.StatusCode)
	}
	// The old cookie is dead even if replayed.
	req, _ := http.NewRequest("GET", r.srv.URL+"/tools", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: sc.Value})
	if resp, err := client().Do(req); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("replayed cookie: %v %v", resp, err)
	}
}

func TestHostileModelOutputIsEscaped(t *testing.T) {
	r := newRig(t, nil)
	c := client()
	r.login(t, c, operatorToken)
	_, body := get(t, c, r.srv.URL+"/turns/"+hostileTurn)
	if strings.Contains(body, "<script>document") || strings.Contains(body, "<img src=x") {
		t.Fatalf("model output reached the page as markup:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;document.title") && !strings.Contains(body, `\u003cscript\u003e`) {
		t.Fatalf("model output not shown escaped:\n%.3000s", body)
	}
}

func TestPostWithoutCSRFRefused(t *testing.T) {
	q := &fakeApprovals{pending: []Approval{{ID: "ap1", Agent: "trader", Tool: "desk.trade"}}, decided: map[string]bool{}}
	r := newRig(t, q)
	c := client()
	_, csrf := r.login(t, c, operatorToken)
	wrong := "0" + csrf[1:]
	if wrong == csrf {
		wrong = "1" + csrf[1:]
	}
	for _, form := range []url.Values{{"decision": {"approve"}}, {"decision": {"approve"}, "csrf": {wrong}}} {
		resp, err := c.PostForm(r.srv.URL+"/approvals/ap1", form)
		if err != nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("POST %v: %v %v", form, resp, err)
		}
	}
	if resp, err := c.PostForm(r.srv.URL+"/logout", nil); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("logout without CSRF: %v %v", resp, err)
	}
	if len(q.decided) != 0 {
		t.Fatal("decided without the CSRF token")
	}
	resp, err := c.PostForm(r.srv.URL+"/approvals/ap1", url.Values{"decision": {"approve"}, "csrf": {csrf}})
	if err != nil || resp.StatusCode != http.StatusSeeOther || !q.decided["ap1"] {
		t.Fatalf("POST with CSRF: %v %v %v", resp, err, q.decided)
	}
	// The login form carries its own token too.
	resp, err = client().PostForm(r.srv.URL+"/login", url.Values{"token": {operatorToken}})
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("login without CSRF: %v %v", resp, err)
	}
}

func TestAgentTokenCannotLogIn(t *testing.T) {
	r := newRig(t, nil)
	c := client()
	for _, tok := range []string{agentToken, "", operatorToken + "x"} {
		resp, csrf := r.login(t, c, tok)
		if csrf != "" || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q logged in: %d", tok, resp.StatusCode)
		}
	}
	if resp, _ := get(t, c, r.srv.URL+"/events"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/events without a session: %d", resp.StatusCode)
	}
}
