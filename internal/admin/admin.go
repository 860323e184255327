// Package admin is cllama's admin listener: the operator's side of the
// proxy (CLLAMA_ADMIN_ADDR), apart from the agents' listener. Every route
// but the ones mounted public requires the operator token, sent as
// Authorization: Bearer <token> and compared in constant time, or what
// an added authenticator accepts (the console's session cookie). Agent
// tokens are not operator tokens: they are refused here like any other
// wrong token, and the agents' listener refuses the operator token (it
// is no agent's).
//
// Features mount their routes (approvals, the console) on the Server as
// cllama is built; the listener itself is started by cmd/cllama.
package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
)

// MaxBodyBytes bounds every request body read on the admin listener.
const MaxBodyBytes = 64 << 10

// MinTokenBytes is the shortest operator token accepted: shorter ones are
// guessable.
const MinTokenBytes = 16

// Server routes the admin listener's requests.
type Server struct {
	mux   *http.ServeMux
	token [sha256.Size]byte

	mu    sync.RWMutex
	extra []func(*http.Request) bool
}

// New returns a Server for the operator token. The token is kept as its
// SHA-256, compared in constant time.
func New(token string) (*Server, error) {
	token = strings.TrimSpace(token)
	if len(token) < MinTokenBytes {
		return nil, fmt.Errorf("the operator token is %d bytes; use at least %d random bytes (claw up writes one to .claw-auth/operator-token)", len(token), MinTokenBytes)
	}
	return &Server{mux: http.NewServeMux(), token: sha256.Sum256([]byte(token))}, nil
}

// ReadToken reads an operator token from a file (CLLAMA_ADMIN_TOKEN_FILE).
func ReadToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("CLLAMA_ADMIN_TOKEN_FILE: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// Handle mounts an operator-only route; pattern is an http.ServeMux
// pattern such as "GET /api/approvals/{id}".
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, s.require(h))
}

// HandlePublic mounts a route anyone reaching the listener may use: a
// login page, embedded assets.
func (s *Server) HandlePublic(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
}

// SetAuthenticator adds a way to be the operator beside the bearer token
// (the console's session cookie). It must decide from the request alone.
func (s *Server) SetAuthenticator(f func(*http.Request) bool) {
	s.mu.Lock()
	s.extra = append(s.extra, f)
	s.mu.Unlock()
}

// Bearer reports whether r carries the operator token as a bearer token.
func (s *Server) Bearer(r *http.Request) bool {
	return s.TokenMatches(bearer(r))
}

// TokenMatches reports, in constant time, whether tok is the operator
// token (the console's login form checks the token it was given).
func (s *Server) TokenMatches(tok string) bool {
	if tok == "" {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], s.token[:]) == 1
}

// Authorized reports whether r comes from the operator: the bearer token
// or an added authenticator.
func (s *Server) Authorized(r *http.Request) bool {
	if s.Bearer(r) {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range s.extra {
		if f(r) {
			return true
		}
	}
	return false
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

func (s *Server) require(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cllama-admin"`)
			WriteError(w, http.StatusUnauthorized, "unauthorized", "this route needs the operator token (Authorization: Bearer <token>, the contents of .claw-auth/operator-token)")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP serves the admin listener: bodies bounded, answers never
// cached, nothing framed.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Error is the admin API's error body: {"error": {"type", "message"}}.
type Error struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// WriteError answers an error in the admin API's shape.
func WriteError(w http.ResponseWriter, status int, typ, msg string) {
	WriteJSON(w, status, map[string]Error{"error": {Type: typ, Message: msg}})
}

// DecodeJSON reads r's body (bounded by ServeHTTP) as exactly one JSON
// value into v, refusing unknown fields; it answers the 400 or 413 itself
// and reports false when it did.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON value")
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is over %d bytes", MaxBodyBytes))
			return false
		}
		WriteError(w, http.StatusBadRequest, "invalid_request", "the body is not the JSON this route takes: "+err.Error())
		return false
	}
	return true
}
