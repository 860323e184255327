package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/recorder"
)

// BenchmarkKeySelection is BenchmarkHandlerNoNetwork's JSON request in
// three configurations, in one run: "single" is the path without a pool
// (the key sent as it comes, as before pools existed), "pool1" and
// "pool4" a pool of one and four keys (key selection, its outcome
// recorded, the circuits). The difference is what key pools cost a
// request on the hot path.
func BenchmarkKeySelection(b *testing.B) {
	for _, kind := range []string{"single", "pool1", "pool4"} {
		b.Run(kind, func(b *testing.B) {
			dir := b.TempDir()
			root := filepath.Join(dir, "context")
			writeFileB(b, filepath.Join(root, "alice", "metadata.json"), `{"token":"`+aliceToken+`"}`)
			keys := `[{"id":"a","secret":"k-a"}]`
			if kind == "pool4" {
				keys = `[{"id":"a","secret":"k-a"},{"id":"b","secret":"k-b"},{"id":"c","secret":"k-c"},{"id":"d","secret":"k-d"}]`
			}
			writeFileB(b, filepath.Join(dir, "auth", "providers.json"), `{"version":2,"providers":{"fake":{"base_url":"http://fake.invalid/v1","keys":`+keys+`}}}`)
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				_, _ = io.Copy(io.Discard, r.Body)
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(bytes.NewReader(benchResponse)), ContentLength: int64(len(benchResponse)), Request: r}, nil
			})
			srv, err := New(Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth")}, Options{Recorder: recorder.New(audit.New(io.Discard), nil), Transport: rt})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			if kind == "single" {
				for _, r := range srv.providers.get(time.Now()).routes {
					r.pool = nil
				}
			}
			body := benchRequest("fake/gpt-fake", false)
			req := httptest.NewRequest(http.MethodPost, pathChat, nil)
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				req.Body = io.NopCloser(bytes.NewReader(body))
				req.ContentLength = int64(len(body))
				clear(w.h)
				srv.ServeHTTP(w, req)
			}
		})
	}
}
