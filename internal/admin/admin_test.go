package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const operator = "0123456789abcdef0123456789abcdef"

func newTestServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(operator)
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("GET /api/ping", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]string{"ok": "yes"})
	}))
	s.Handle("POST /api/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]string
		if DecodeJSON(w, r, &v) {
			WriteJSON(w, http.StatusOK, v)
		}
	}))
	s.HandlePublic("GET /login", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("login")) }))
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func get(t *testing.T, url, auth string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestAdminRoutesNeedTheOperatorToken(t *testing.T) {
	_, srv := newTestServer(t)
	for _, c := range []struct {
		name, auth string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"an agent's token", "Bearer trader:" + strings.Repeat("ab", 24), http.StatusUnauthorized},
		{"a wrong token", "Bearer " + strings.Repeat("x", len(operator)), http.StatusUnauthorized},
		{"the token as a prefix", "Bearer " + operator + "0", http.StatusUnauthorized},
		{"basic auth", "Basic " + operator, http.StatusUnauthorized},
		{"the operator token", "Bearer " + operator, http.StatusOK},
		{"the operator token, scheme in lower case", "bearer " + operator, http.StatusOK},
	} {
		if got := get(t, srv.URL+"/api/ping", c.auth).StatusCode; got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if got := get(t, srv.URL+"/login", "").StatusCode; got != http.StatusOK {
		t.Errorf("public route: %d", got)
	}
}

func TestAuthenticatorAddsAWayIn(t *testing.T) {
	s, srv := newTestServer(t)
	s.SetAuthenticator(func(r *http.Request) bool {
		c, err := r.Cookie("session")
		return err == nil && c.Value == "good"
	})
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/ping", nil)
	req.AddCookie(&http.Cookie{Name: "session", Value: "good"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("session accepted by the authenticator: %d", resp.StatusCode)
	}
	if got := get(t, srv.URL+"/api/ping", "").StatusCode; got != http.StatusUnauthorized {
		t.Fatalf("without the session: %d", got)
	}
}

func TestBodiesAreBoundedAndStrict(t *testing.T) {
	_, srv := newTestServer(t)
	post := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/echo", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+operator)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(`{"a":"b"}`); got != http.StatusOK {
		t.Errorf("valid body: %d", got)
	}
	if got := post(`{"a":"b"} {"c":"d"}`); got != http.StatusBadRequest {
		t.Errorf("two values: %d", got)
	}
	if got := post(`{"a":"` + strings.Repeat("x", MaxBodyBytes) + `"}`); got != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", got)
	}
}

func TestShortTokensAreRefused(t *testing.T) {
	if _, err := New("short"); err == nil {
		t.Fatal("a 5-byte operator token was accepted")
	}
}
