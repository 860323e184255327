package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/proxy"
)

// consoleMux is an admin listener's public side for the test.
type consoleMux struct {
	*http.ServeMux
	auth func(*http.Request) bool
}

func (m *consoleMux) HandlePublic(p string, h http.Handler)       { m.Handle(p, h) }
func (m *consoleMux) SetAuthenticator(f func(*http.Request) bool) { m.auth = f }

// The console wired into cllama's stages: a mediated turn through the
// proxy reaches the agent's page and its turn page shows the hidden round;
// an agent token cannot log in; no secret reaches a page.
func TestConsoleFollowsTraffic(t *testing.T) {
	up := fakeProvider(t)
	dir := t.TempDir()
	svc := newToolService(t)
	ctxDir := filepath.Join(dir, "context")
	write(t, filepath.Join(ctxDir, "analyst", "metadata.json"), `{"token":"analyst:s3cret","service":"analyst"}`)
	write(t, filepath.Join(ctxDir, "analyst", "tools.json"), nativeTools(svc.srv.URL))
	write(t, filepath.Join(ctxDir, "analyst", "service-auth", "desk.json"), `{"service":"desk","auth_type":"bearer","token":"projected-for-analyst"}`)
	cfg, err := proxy.LoadConfig(nil, []string{"CLAW_CONTEXT_ROOT=" + ctxDir, "CLAW_AUTH_DIR=" + filepath.Join(dir, "auth"),
		"CLAW_SESSION_HISTORY_DIR=" + filepath.Join(dir, "history"), "CLAW_POD=desk", "OPENAI_API_KEY=sk-unused",
		"OPENAI_BASE_URL=" + up.URL + "/v1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	st, err := wireStages(cfg, audit.New(io.Discard), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := proxy.New(cfg, st.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const opToken = "operator-token-for-the-console-test"
	mux := &consoleMux{ServeMux: http.NewServeMux()}
	stop, err := startConsole(context.Background(), cfg, st, srv, mux, func(tok string) bool { return tok == opToken }, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	agentSide, adminSide := httptest.NewServer(srv), httptest.NewServer(mux)
	defer agentSide.Close()
	defer adminSide.Close()
	defer stop()

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		res, err := c.Get(adminSide.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	login := func(token string) (int, string) {
		_, page := get("/login")
		m := csrf.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("login page:\n%s", page)
		}
		res, err := c.PostForm(adminSide.URL+"/login", url.Values{"csrf": {m[1]}, "token": {token}})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := login("analyst:s3cret"); code != http.StatusUnauthorized {
		t.Fatalf("an agent token logged in: %d", code)
	}
	if code, body := login(opToken); code != 200 || !strings.Contains(body, `href="/agents/analyst"`) {
		t.Fatalf("operator login: %d\n%s", code, body)
	}
	analystTurn(t, agentSide.URL)
	// The live counter heard it.
	if _, page := get("/"); !strings.Contains(page, `data-live-agent="analyst" data-live-field="requests">1<`) {
		t.Fatalf("live counter:\n%s", page)
	}
	turn := regexp.MustCompile(`href="/turns/([^"]+)"`)
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, page := get("/agents/analyst")
		if m := turn.FindStringSubmatch(page); m != nil {
			id = m[1]
		}
	}
	if id == "" {
		t.Fatal("the turn never reached the agent's page")
	}
	code, page := get("/turns/" + id)
	if code != 200 || !strings.Contains(page, "Hidden round 1") || !strings.Contains(page, "desk.trade") {
		t.Fatalf("turn page %d:\n%s", code, page)
	}
	for _, path := range []string{"/", "/agents/analyst", "/turns/" + id, "/tools", "/feeds", "/approvals"} {
		_, body := get(path)
		for _, secret := range []string{"s3cret", opToken, "projected-for-analyst", svc.srv.URL} {
			if strings.Contains(body, secret) {
				t.Fatalf("%s shows %q", path, secret)
			}
		}
	}
	if mux.auth == nil {
		t.Fatal("the console set no authenticator on the admin listener")
	}
}

// The console on a real cllama: the operator logs in on the admin
// listener, a mediated turn goes through the proxy, and its page shows the
// hidden round; an agent token cannot log in, and no secret reaches a page.
func TestConsoleOnTheAdminListener(t *testing.T) {
	up := fakeProvider(t)
	opToken := testOperatorToken
	p := startMCPPod(t, "CLLAMA_ADMIN_ADDR=127.0.0.1:0", "CLLAMA_ADMIN_TOKEN="+opToken, "OPENAI_BASE_URL="+up.URL+"/v1")
	admin := adminURL(t, p)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		res, err := c.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	login := func(token string) (int, string) {
		_, page := get("/login")
		m := csrf.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("login page:\n%s", page)
		}
		res, err := c.PostForm(admin+"/login", url.Values{"csrf": {m[1]}, "token": {token}})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := login("analyst:s3cret"); code != http.StatusUnauthorized {
		t.Fatalf("an agent token logged in: %d", code)
	}
	if code, body := login(opToken); code != 200 || !strings.Contains(body, `href="/agents/analyst"`) {
		t.Fatalf("operator login: %d\n%s", code, body)
	}
	// Both attempts are audited, without the tokens they sent.
	var logins []string
	for _, e := range p.events(t) {
		if e.Type == audit.TypeConsoleLogin && e.Login != nil && e.Login.Client == "127.0.0.1" {
			logins = append(logins, e.Login.Outcome)
		}
	}
	if strings.Join(logins, " ") != "refused ok" || strings.Contains(p.audit.String(), opToken) || strings.Contains(p.audit.String(), "s3cret") {
		t.Fatalf("console_login events %v in the audit:\n%s", logins, p.audit.String())
	}
	analystTurn(t, p.base)
	turn := regexp.MustCompile(`href="/turns/([^"]+)"`)
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, page := get("/agents/analyst")
		if m := turn.FindStringSubmatch(page); m != nil {
			id = m[1]
		}
	}
	if id == "" {
		t.Fatal("the turn never reached the agent's page")
	}
	code, page := get("/turns/" + id)
	if code != 200 || !strings.Contains(page, "Hidden round 1") || !strings.Contains(page, "desk.trade") {
		t.Fatalf("turn page %d:\n%s", code, page)
	}
	for _, path := range []string{"/", "/agents/analyst", "/turns/" + id, "/tools", "/feeds", "/approvals"} {
		_, body := get(path)
		for _, secret := range []string{"s3cret", opToken, "projected-for-analyst", p.svc.srv.URL} {
			if strings.Contains(body, secret) {
				t.Fatalf("%s shows %q", path, secret)
			}
		}
	}
}
