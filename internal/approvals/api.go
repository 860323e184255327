package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The admin API's routes (cllama's admin listener, operator token).
const (
	RouteList   = "GET /api/approvals"
	RouteGet    = "GET /api/approvals/{id}"
	RouteDecide = "POST /api/approvals/{id}"
)

// MaxDecisionBytes bounds a decision body.
const MaxDecisionBytes = 16 << 10

// MaxListed bounds the requests GET /api/approvals lists.
const MaxListed = 1000

// DecisionBody is POST /api/approvals/{id}'s body.
type DecisionBody struct {
	// Decision is "approve" or "deny".
	Decision string `json:"decision"`
	// Reason is required to deny (the model reads it), optional to approve.
	Reason string `json:"reason,omitempty"`
	// By names who decided (default "operator").
	By string `json:"by,omitempty"`
	// ArgumentsSHA256, when set, binds the decision to the arguments the
	// operator saw.
	ArgumentsSHA256 string `json:"arguments_sha256,omitempty"`
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseDecision reads a decision body: one JSON object with exactly the
// fields of DecisionBody (names as written, each at most once), a known
// decision, a reason to deny, text without control characters within
// MaxReasonBytes and MaxByBytes.
func ParseDecision(data []byte) (Decision, error) {
	var d Decision
	if len(data) > MaxDecisionBytes {
		return d, fmt.Errorf("the body is over %d bytes", MaxDecisionBytes)
	}
	if err := exactMembers(data); err != nil {
		return d, err
	}
	var b DecisionBody
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return d, fmt.Errorf("write {\"decision\": \"approve\"|\"deny\", \"reason\": \"…\", \"by\": \"…\"}: %v", err)
	}
	if dec.More() {
		return d, errors.New("trailing data after the JSON object")
	}
	switch b.Decision {
	case "approve":
		d.State = Approved
	case "deny":
		d.State = Denied
		if strings.TrimSpace(b.Reason) == "" {
			return d, errors.New("reason: required to deny (the model is told it)")
		}
	default:
		return d, fmt.Errorf("decision: %q must be \"approve\" or \"deny\"", b.Decision)
	}
	if err := text("reason", b.Reason, MaxReasonBytes, true); err != nil {
		return d, err
	}
	if err := text("by", b.By, MaxByBytes, false); err != nil {
		return d, err
	}
	if b.ArgumentsSHA256 != "" && !sha256Hex.MatchString(b.ArgumentsSHA256) {
		return d, errors.New("arguments_sha256: must be 64 lowercase hex digits (the request's arguments_sha256)")
	}
	d.Reason, d.By, d.ArgumentsSHA256 = strings.TrimSpace(b.Reason), strings.TrimSpace(b.By), b.ArgumentsSHA256
	if d.By == "" {
		d.By = "operator"
	}
	return d, nil
}

// text checks a field an operator wrote: valid UTF-8, within max bytes,
// no control characters (newlines and tabs too, unless multiline).
func text(name, s string, max int, multiline bool) error {
	if len(s) > max {
		return fmt.Errorf("%s: at most %d bytes", name, max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s: not valid UTF-8", name)
	}
	for _, r := range s {
		if (r < 0x20 && !(multiline && (r == '\n' || r == '\t'))) || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%s: control characters are not allowed", name)
		}
	}
	return nil
}

// exactMembers refuses a top-level member written twice or in another
// case than DecisionBody's (encoding/json would take the last, or match
// case-insensitively): what is decided is what was written.
func exactMembers(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("the body must be a JSON object: %v", err)
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '{' {
		return errors.New("the body must be a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		switch name {
		case "decision", "reason", "by", "arguments_sha256":
		default:
			return fmt.Errorf("unknown member %q (decision, reason, by, arguments_sha256)", name)
		}
		if seen[name] {
			return fmt.Errorf("member %q is written twice", name)
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// Mounter is where routes are mounted (the admin listener).
type Mounter interface {
	Handle(pattern string, h http.Handler)
}

// Mount mounts the approval routes on mux.
func (m *Manager) Mount(mux Mounter) {
	mux.Handle(RouteList, http.HandlerFunc(m.serveList))
	mux.Handle(RouteGet, http.HandlerFunc(m.serveGet))
	mux.Handle(RouteDecide, http.HandlerFunc(m.serveDecide))
}

func (m *Manager) serveList(w http.ResponseWriter, r *http.Request) {
	rs, err := m.o.Store.Pending(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the approval store did not answer: "+err.Error())
		return
	}
	if len(rs) > MaxListed {
		rs = rs[:MaxListed]
	}
	if rs == nil {
		rs = []*Request{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": rs})
}

func (m *Manager) serveGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !ValidID(id) {
		writeError(w, http.StatusNotFound, "not_found", "no approval request "+quoteID(id))
		return
	}
	req, err := m.o.Store.Get(r.Context(), id)
	m.answer(w, req, err, id)
}

func (m *Manager) serveDecide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxDecisionBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "reading the body: "+err.Error())
		return
	}
	d, err := ParseDecision(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if !ValidID(id) {
		writeError(w, http.StatusNotFound, "not_found", "no approval request "+quoteID(id))
		return
	}
	req, err := m.Decide(r.Context(), id, d)
	m.answer(w, req, err, id)
}

// answer writes a request, or why there is none (404 unknown, 409 no
// longer pending or other arguments, with the request as it is).
func (m *Manager) answer(w http.ResponseWriter, req *Request, err error, id string) {
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, req)
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no approval request "+quoteID(id))
	case errors.Is(err, ErrDecided):
		writeJSON(w, http.StatusConflict, map[string]any{"error": apiError{Type: "conflict", Message: fmt.Sprintf("approval request %s is already %s", id, req.State)}, "approval": req})
	case errors.Is(err, ErrMismatch):
		writeJSON(w, http.StatusConflict, map[string]any{"error": apiError{Type: "conflict", Message: "arguments_sha256 is not this request's: the decision was not applied; read the request again"}, "approval": req})
	default:
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the approval store did not answer: "+err.Error())
	}
}

// quoteID quotes an id from a URL for a message (bounded).
func quoteID(id string) string {
	if len(id) > 64 {
		id = id[:64] + "…"
	}
	return fmt.Sprintf("%q", id)
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": apiError{Type: typ, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
