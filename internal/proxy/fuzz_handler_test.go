package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/recorder"
)

// FuzzHandler sends arbitrary bodies, credentials and endpoints through the
// whole handler (with an in-memory provider): it must never panic, and
// every answer is either the provider's or a JSON error in the endpoint's
// format; a refused request never reaches the provider.
func FuzzHandler(f *testing.F) {
	f.Add(true, "Bearer "+aliceToken, []byte(`{"model":"fake/m","messages":[]}`))
	f.Add(false, aliceToken, []byte(`{"model":"fake/m","stream":true}`))
	f.Add(true, "Bearer alice:", []byte(`{"model":"nope/x"}`))
	f.Add(false, "", []byte(`[1,2]`))
	f.Add(true, "Bearer ../../etc:x", []byte(`{"model":"fake/`+"\xff"+`"}`))
	dir := f.TempDir()
	root := filepath.Join(dir, "context")
	writeFileF(f, filepath.Join(root, "alice", "metadata.json"), `{"token":"`+aliceToken+`"}`)
	writeFileF(f, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"http://fake.invalid/v1","api_key":"k"}}}`)
	var calls int
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls++
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader([]byte(openAIJSON))), ContentLength: int64(len(openAIJSON)), Request: r}, nil
	})
	srv, err := New(Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth"), MaxBodyBytes: 4096}, Options{Recorder: recorder.New(audit.New(io.Discard), nil), Transport: rt})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, anthropic bool, auth string, body []byte) {
		path := pathChat
		if anthropic {
			path = pathMessages
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		if anthropic {
			req.Header.Set("X-Api-Key", auth)
		} else {
			req.Header["Authorization"] = []string{auth}
		}
		before := calls
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code == 200 {
			if rec.Body.String() != openAIJSON || calls != before+1 {
				t.Fatalf("200 without the provider's answer: %q", rec.Body)
			}
			return
		}
		if calls != before {
			t.Fatalf("refused request (%d) reached the provider", rec.Code)
		}
		var e map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e["error"] == nil {
			t.Fatalf("status %d with a non-error body %q", rec.Code, rec.Body)
		}
		if anthropic && string(e["type"]) != `"error"` {
			t.Fatalf("Anthropic error without type: %q", rec.Body)
		}
	})
}

func writeFileF(f *testing.F, path, content string) {
	f.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		f.Fatal(err)
	}
}
