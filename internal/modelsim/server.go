package modelsim

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawdapus/clawgo/internal/sse"
)

// Options configures a Server. Zero fields mean the documented default.
type Options struct {
	// Script answers requests. Required.
	Script *Script
	// RequestLog, when set, receives one JSON line per request (a Record).
	RequestLog io.Writer
	// KeepRequests bounds the records kept for GET /requests. Default 1000.
	KeepRequests int
	// MaxBodyBytes bounds a request body. Default 16 MiB.
	MaxBodyBytes int64
	// Logger logs each request's rule. Default: discard.
	Logger *slog.Logger
	// Now stamps responses and records. Default time.Now.
	Now func() time.Time
}

// Server is the scripted provider's HTTP handler.
type Server struct {
	opts   Options
	script atomic.Pointer[Script]
	ids    ids
	mux    *http.ServeMux

	mu      sync.Mutex // guards records, seq and writes to RequestLog
	records []Record
	seq     int
	// kept are the Responses API responses kept for
	// previous_response_id and GET /v1/responses/{id}, at most
	// KeepRequests.
	kept *keptResponses
}

// Record is one request the server received, as GET /requests and the
// request log report it.
type Record struct {
	Seq  int       `json:"seq"`
	Time time.Time `json:"time"`
	Path string    `json:"path"`
	// Rule is the rule that answered; empty when none did.
	Rule   string `json:"rule,omitempty"`
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
	*Conversation
	// Auth holds the credential headers as received (Authorization,
	// X-Api-Key), so tests can check which key reached the provider. This
	// is a test double: do not point it at real credentials.
	Auth map[string]string `json:"auth,omitempty"`
	// Body is the request exactly as received, when it was JSON.
	Body json.RawMessage `json:"body,omitempty"`
}

// NewServer builds a Server.
func NewServer(opts Options) (*Server, error) {
	if opts.Script == nil {
		return nil, errors.New("modelsim: no script")
	}
	if opts.KeepRequests <= 0 {
		opts.KeepRequests = 1000
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 16 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, kept: newKeptResponses(opts.KeepRequests)}
	s.script.Store(opts.Script)
	mux := http.NewServeMux()
	// Base URLs usually end in /v1, but accept them without it too.
	for _, p := range []string{"/v1/chat/completions", "/chat/completions"} {
		mux.HandleFunc("POST "+p, func(w http.ResponseWriter, r *http.Request) { s.serveModel(w, r, FormatOpenAI) })
	}
	for _, p := range []string{"/v1/messages", "/messages"} {
		mux.HandleFunc("POST "+p, func(w http.ResponseWriter, r *http.Request) { s.serveModel(w, r, FormatAnthropic) })
	}
	for _, p := range []string{"/v1/responses", "/responses"} {
		mux.HandleFunc("POST "+p, func(w http.ResponseWriter, r *http.Request) { s.serveModel(w, r, FormatResponses) })
		mux.HandleFunc("GET "+p+"/{id}", s.serveStored)
		mux.HandleFunc("DELETE "+p+"/{id}", s.serveStored)
		mux.HandleFunc("GET "+p+"/{id}/input_items", s.serveStored)
	}
	mux.HandleFunc("GET /health", s.serveHealth)
	mux.HandleFunc("GET /requests", s.serveRequests)
	mux.HandleFunc("DELETE /requests", s.clearRequests)
	s.mux = mux
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// SetScript replaces the script for requests that arrive from now on.
func (s *Server) SetScript(sc *Script) { s.script.Store(sc) }

// Requests returns a copy of the kept records, oldest first.
func (s *Server) Requests() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.records...)
}

func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, format string) {
	rec := Record{Time: s.opts.Now().UTC(), Path: r.URL.Path, Auth: authHeaders(r)}
	fail := func(status int, typ, code, msg string) {
		rec.Status, rec.Error = status, msg
		s.record(rec)
		if format == FormatAnthropic {
			writeAnthropicError(w, status, typ, msg)
		} else { // chat completions and Responses share the error shape
			writeOpenAIError(w, status, typ, code, msg)
		}
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			fail(http.StatusRequestEntityTooLarge, "request_too_large", "request_too_large", "request body too large")
			return
		}
		fail(http.StatusBadRequest, "", "", "reading request body: "+err.Error())
		return
	}
	if json.Valid(body) {
		rec.Body = body
	}
	decode := decodeOpenAI
	switch format {
	case FormatAnthropic:
		decode = decodeAnthropic
	case FormatResponses:
		decode = s.decodeResponses
	}
	conv, err := decode(body)
	var refused *apiError
	if errors.As(err, &refused) {
		rec.Status, rec.Error = refused.status, refused.msg
		s.record(rec)
		writeOpenAIErrorParam(w, refused.status, refused.typ, refused.code, refused.param, refused.msg)
		return
	}
	if err != nil {
		fail(http.StatusBadRequest, "", "invalid_request", err.Error())
		return
	}
	rec.Conversation = conv

	rule := s.script.Load().Match(conv)
	if rule == nil {
		msg := conv.describe()
		s.opts.Logger.Warn("no rule matched", "format", format, "model", conv.Model, "last_user", clip(conv.LastUserText, 80), "tools", conv.Tools)
		fail(http.StatusBadRequest, "", "no_matching_rule", msg)
		return
	}
	rec.Rule = rule.Name
	s.opts.Logger.Info("answering", "rule", rule.Name, "format", format, "model", conv.Model, "stream", conv.Stream)

	if d := rule.Reply.DelayMs; d > 0 {
		t := time.NewTimer(time.Duration(d) * time.Millisecond)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			rec.Status, rec.Error = 499, "client went away during delay_ms"
			s.record(rec)
			return
		}
	}
	if e := rule.Reply.Error; e != nil {
		fail(e.Status, e.Type, e.Type, e.Message)
		return
	}

	a := s.makeAnswer(conv, rule)
	rec.Status = http.StatusOK
	s.record(rec)
	now := s.opts.Now()
	switch {
	case !conv.Stream && format == FormatOpenAI:
		writeOpenAI(w, a, now)
	case !conv.Stream && format == FormatResponses:
		s.writeResponses(w, conv, a, now)
	case !conv.Stream:
		writeAnthropic(w, a)
	default:
		sse.PrepareHeader(w.Header())
		w.WriteHeader(http.StatusOK)
		sw := sse.NewWriter(w)
		switch format {
		case FormatOpenAI:
			err = streamOpenAI(sw, a, conv.IncludeUsage, now)
		case FormatResponses:
			err = s.streamResponses(sw, conv, a, now)
		default:
			err = streamAnthropic(sw, a)
		}
		if err != nil {
			s.opts.Logger.Warn("stream cut short", "rule", rule.Name, "err", err)
		}
	}
}

func authHeaders(r *http.Request) map[string]string {
	out := map[string]string{}
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			out[h] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (s *Server) record(rec Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	rec.Seq = s.seq
	if len(s.records) >= s.opts.KeepRequests {
		s.records = append(s.records[:0], s.records[1:]...)
	}
	s.records = append(s.records, rec)
	if s.opts.RequestLog != nil {
		b, err := json.Marshal(rec)
		if err == nil {
			b = append(b, '\n')
			if _, err = s.opts.RequestLog.Write(b); err != nil {
				s.opts.Logger.Warn("writing request log", "err", err)
			}
		}
	}
}

func (s *Server) serveHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "rules": len(s.script.Load().Rules)})
}

// serveRequests lists the kept records; ?since=N keeps only those with a
// sequence number above N, so a test can poll for what is new.
func (s *Server) serveRequests(w http.ResponseWriter, r *http.Request) {
	since := 0
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			http.Error(w, "since must be a non-negative integer", http.StatusBadRequest)
			return
		}
		since = n
	}
	recs := []Record{}
	for _, rec := range s.Requests() {
		if rec.Seq > since {
			recs = append(recs, rec)
		}
	}
	writeJSON(w, http.StatusOK, recs)
}

func (s *Server) clearRequests(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.records = nil
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
