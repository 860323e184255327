package toolexec

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// A service that echoes the request headers in a successful answer (a debug
// endpoint, an httpbin-like echo) must not hand the model the projected
// bearer: credentials never appear in an envelope, success or failure.
func TestSuccessDataNeverCarriesTheCredential(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	const token = "projected-secret-0123456789abcdef"
	for _, tc := range []struct {
		name  string
		ctype string
		body  func(r *http.Request) string
	}{
		{"json", "application/json", func(r *http.Request) string {
			return `{"headers":{"Authorization":"` + r.Header.Get("Authorization") + `"},"raw":"` + token + `"}`
		}},
		{"text", "text/plain", func(r *http.Request) string {
			return "you sent " + r.Header.Get("Authorization") + " and " + token
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := newService(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				w.Header().Set("Content-Type", tc.ctype)
				io.WriteString(w, tc.body(r))
			})
			tool := httpTool(svc.URL, "GET", "/echo", "")
			tool.Execution.Auth = &manifest.Auth{Type: "bearer", Token: token}
			env := run(t, e, tool, `{}`)
			wantOK(t, env)
			if got := mustJSON(env); strings.Contains(got, token) || strings.Contains(got, token[:16]) {
				t.Fatalf("envelope leaks the service credential: %s", got)
			}
		})
	}
}

// The error snippet is cut to ErrorSnippetBytes; the credential must be
// removed before the cut, or a token straddling it leaks its first bytes.
func TestErrorSnippetCutNeverLeaksPartOfTheCredential(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	const token = "projected-secret-0123456789abcdef"
	// Place the token so that the snippet bound falls inside it.
	pad := strings.Repeat("x", DefaultErrorSnippetBytes-len("service svc answered ")-10)
	svc := newService(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, pad+" "+token+" trailing")
	})
	tool := httpTool(svc.URL, "GET", "/x", "")
	tool.Execution.Auth = &manifest.Auth{Type: "bearer", Token: token}
	env := run(t, e, tool, `{}`)
	wantFail(t, env, CodeServiceError, 0)
	if strings.Contains(env.Error.Message, token[:12]) {
		t.Fatalf("message leaks part of the credential: %q", env.Error.Message[len(env.Error.Message)-80:])
	}
}
