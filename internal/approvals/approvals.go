// Package approvals holds side-effecting calls for a person's decision
// (pod keys `approve:` and x-claw.tool-policy.approve-destructive): a held
// call becomes a Request bound to the exact call (agent, canonical tool,
// service, the arguments as the service would receive them and their
// SHA-256 over canonical JSON, the rule, the digest of the agent's
// compiled tools, an expiry), waits in a Store until an operator decides
// it on cllama's admin API (GET/POST /api/approvals…), it expires or the
// caller goes away, and runs only when approved, with exactly the
// approved arguments. A decision is single-use: it ends one request.
//
// The Store is local (one cllama) or in Redis (CLLAMA_STATE_URL: a
// decision made through any replica releases the call held on another).
// Nothing approved before a restart ever runs: the call waits in the
// memory of the process that held it, and requests left pending by a
// process that is gone end as lost.
//
// It does not decide which calls are held (internal/policy evaluates the
// rules, internal/toolcall asks) nor authenticate operators
// (internal/admin).
package approvals

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/clawdapus/clawgo/internal/wire"
)

// States of a request. Every state but Pending is final.
const (
	Pending   = "pending"
	Approved  = "approved"
	Denied    = "denied"
	Timeout   = "timeout"
	Cancelled = "cancelled"
	Lost      = "lost"
)

// Result codes of a held call that did not run (the model or the MCP
// client reads them).
const (
	CodeDenied    = "approval_denied"
	CodeTimeout   = "approval_timeout"
	CodeCancelled = "approval_cancelled"
	CodeLost      = "approval_lost"
)

// Bounds of what an operator writes.
const (
	MaxReasonBytes = 2000
	MaxByBytes     = 200
)

// Request is one held call, as the admin API shows it.
type Request struct {
	ID      string `json:"id"`
	Agent   string `json:"agent"`
	Tool    string `json:"tool"`
	Service string `json:"service"`
	// Mode is how the call came (mediated, native).
	Mode string `json:"mode,omitempty"`
	// Arguments are the call's arguments as the service would receive
	// them (claw_id forced to the agent); ArgumentsSHA256 their digest
	// over canonical JSON.
	Arguments       json.RawMessage `json:"arguments"`
	ArgumentsSHA256 string          `json:"arguments_sha256"`
	// Rule is the approval that held the call, and where it was written.
	Rule string `json:"rule"`
	// ToolsSHA256 is the digest of the agent's compiled tools the call
	// was held under.
	ToolsSHA256 string    `json:"tools_sha256,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	State       string    `json:"state"`
	// DecidedAt, By and Reason are set once the request left Pending.
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	By        string     `json:"by,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	// Replica is the cllama process holding the call (Redis: a request
	// whose replica is gone is lost).
	Replica string `json:"replica,omitempty"`
}

// Final reports whether r left Pending.
func (r *Request) Final() bool { return r.State != Pending }

// Decision ends a pending request.
type Decision struct {
	// State is Approved, Denied, Timeout, Cancelled or Lost.
	State  string
	By     string
	Reason string
	// ArgumentsSHA256, when set, binds the decision to the arguments the
	// operator saw: a request with other arguments is not decided.
	ArgumentsSHA256 string
}

// Errors of a Store.
var (
	ErrNotFound = errors.New("no such approval request")
	// ErrDecided: the request is no longer pending (decided, expired,
	// cancelled or lost); the Store returns it as it is.
	ErrDecided = errors.New("the approval request is no longer pending")
	// ErrMismatch: the decision names other arguments than the request's.
	ErrMismatch = errors.New("the decision's arguments_sha256 is not the request's")
)

// NewID returns an unguessable request id: 128 random bits, hex.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// ValidID reports whether id has NewID's shape.
func ValidID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Digest is the SHA-256 of args (JSON) over canonical JSON (keys sorted,
// no insignificant whitespace), hex; "" when args is not JSON.
func Digest(args []byte) string {
	c, err := wire.CanonicalJSON(args)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// decide applies d to r (pending) at now.
func decide(r *Request, d Decision, now time.Time) {
	t := now.UTC()
	r.State, r.By, r.Reason, r.DecidedAt = d.State, d.By, d.Reason, &t
}

// check is what Decide does before applying d to r: ErrDecided when r is
// final, ErrMismatch when d names other arguments.
func check(r *Request, d Decision) error {
	if r.Final() {
		return ErrDecided
	}
	if d.ArgumentsSHA256 != "" && d.ArgumentsSHA256 != r.ArgumentsSHA256 {
		return ErrMismatch
	}
	return nil
}
