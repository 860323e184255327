package mcpstdio

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
)

// Handler serves GET /healthz and the MCP endpoint at Config.Path. The
// child must be started by Serve (or Run) for calls to succeed.
func (w *Wrapper) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", w.serveHealth)
	mux.Handle(w.cfg.Path, w.guard(w.mcp))
	return mux
}

// guard checks the edge before any MCP work: the bearer token, then the
// body size (STYLE: "Guard the edge before any work").
func (w *Wrapper) guard(next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(w.cfg.AuthToken))
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if w.cfg.AuthToken != "" {
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			// Comparing digests keeps the comparison constant-time in the
			// token's length too.
			got := sha256.Sum256([]byte(tok))
			if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				rw.Header().Set("WWW-Authenticate", `Bearer realm="claw-mcp-stdio"`)
				http.Error(rw, "missing or invalid bearer token", http.StatusUnauthorized)
				return
			}
		}
		if r.ContentLength > w.cfg.MaxBodyBytes {
			http.Error(rw, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(rw, r.Body, w.cfg.MaxBodyBytes)
		// POSTs carry calls and their answers; shutdown drains them
		// (GETs are long-lived notification streams and are not counted).
		if r.Method == http.MethodPost {
			w.posts.Add(1)
			defer w.posts.Add(-1)
		}
		next.ServeHTTP(rw, r)
	})
}

func (w *Wrapper) serveHealth(rw http.ResponseWriter, _ *http.Request) {
	h := w.sup.snapshot()
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	if h.Status != StatusUp {
		rw.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(rw).Encode(h)
}
