package adminclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/clawdapus/clawgo/internal/admin"
)

func TestClientAgainstTheAdminListener(t *testing.T) {
	const token = "fedcba9876543210fedcba9876543210"
	s, err := admin.New(token)
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("POST /api/things/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Decision string }
		if !admin.DecodeJSON(w, r, &body) {
			return
		}
		if r.PathValue("id") == "gone" {
			admin.WriteError(w, http.StatusConflict, "already_decided", "thing gone was decided already")
			return
		}
		admin.WriteJSON(w, http.StatusOK, map[string]string{"id": r.PathValue("id"), "decision": body.Decision})
	}))
	srv := httptest.NewServer(s)
	defer srv.Close()

	var out map[string]string
	if err := New(srv.URL+"/", token).Do(context.Background(), http.MethodPost, "/api/things/a1", map[string]string{"decision": "approve"}, &out); err != nil {
		t.Fatal(err)
	}
	if out["id"] != "a1" || out["decision"] != "approve" {
		t.Fatalf("answer %v", out)
	}
	err = New(srv.URL, token).Do(context.Background(), http.MethodPost, "/api/things/gone", map[string]string{"decision": "deny"}, nil)
	if StatusOf(err) != http.StatusConflict || err.Error() != "cllama's admin API answered 409: thing gone was decided already" {
		t.Fatalf("conflict: %v", err)
	}
	err = New(srv.URL, "wrong-token-wrong-token").Do(context.Background(), http.MethodPost, "/api/things/a1", map[string]string{}, nil)
	if StatusOf(err) != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v", err)
	}
}
