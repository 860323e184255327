// Package resultstore keeps managed tool results too large for the model's
// context, whole, behind an opaque handle the model pages and searches
// with the built-in tool claw.read_result (read.go). It owns the handle
// (random, bound to an agent and a conversation), the stores (Local: files
// under cllama's state directory, or memory; Redis: shared by replicas),
// their bounds (per agent and in total bytes, oldest first), expiry, and
// the read tool's arguments and answers. When a result is stored, and
// how its envelope looks, belong to internal/toolcall; which conversation
// a call belongs to, to its callers (internal/mediate, internal/broker).
package resultstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"time"
)

// Defaults of Limits' zero values (docs/cllama.md).
const (
	// DefaultMaxResultBytes is the absolute bound of one result: a longer
	// one is cut at it, and says so (CLLAMA_RESULT_MAX_BYTES).
	DefaultMaxResultBytes = 64 << 20
	// DefaultMaxAgentBytes bounds what one agent's handles hold
	// (CLLAMA_RESULT_STORE_AGENT_BYTES).
	DefaultMaxAgentBytes = 256 << 20
	// DefaultMaxBytes bounds what the store holds (CLLAMA_RESULT_STORE_BYTES).
	DefaultMaxBytes = 1 << 30
	// DefaultMaxAgentEntries bounds one agent's live handles.
	DefaultMaxAgentEntries = 1024
	// DefaultTTL is how long a handle lives when the pod sets no
	// x-claw.tool-policy.result-ttl.
	DefaultTTL = time.Hour
	// MaxTTL is the longest result-ttl a pod may set.
	MaxTTL = 7 * 24 * time.Hour
)

// Limits bound a store. The zero value gives the defaults.
type Limits struct {
	// MaxResultBytes bounds one stored result. Default 64 MiB.
	MaxResultBytes int64
	// MaxAgentBytes bounds the bytes of one agent's live handles; the
	// oldest go first beyond it. Default 256 MiB.
	MaxAgentBytes int64
	// MaxBytes bounds the bytes of every live handle; the oldest (of any
	// agent) go first beyond it. Default 1 GiB.
	MaxBytes int64
	// MaxAgentEntries bounds one agent's live handles. Default 1024.
	MaxAgentEntries int
}

// WithDefaults fills zero fields.
func (l Limits) WithDefaults() Limits {
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = DefaultMaxResultBytes
	}
	if l.MaxAgentBytes <= 0 {
		l.MaxAgentBytes = DefaultMaxAgentBytes
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxAgentEntries <= 0 {
		l.MaxAgentEntries = DefaultMaxAgentEntries
	}
	return l
}

// Validate reports limits that contradict each other.
func (l Limits) Validate() error {
	l = l.WithDefaults()
	switch {
	case l.MaxAgentBytes < l.MaxResultBytes:
		return errors.New("CLLAMA_RESULT_STORE_AGENT_BYTES is below CLLAMA_RESULT_MAX_BYTES: one result would not fit an agent's share; raise it or lower the result bound")
	case l.MaxBytes < l.MaxAgentBytes:
		return errors.New("CLLAMA_RESULT_STORE_BYTES is below CLLAMA_RESULT_STORE_AGENT_BYTES: raise it or lower the agent bound")
	}
	return nil
}

// Scope is who may read a handle: the agent, and the conversation the
// result was produced in (the caller's word for it: "mcp:<session>" on
// /mcp, "mediated" in the model loop, whose conversations are told apart
// by the hidden rounds continuity restores).
type Scope struct {
	Agent, Conversation string
}

// Meta is what a store knows of a handle besides its body.
type Meta struct {
	Agent        string `json:"agent"`
	Conversation string `json:"conversation"`
	Tool         string `json:"tool"`
	// Size is the stored body's size in bytes.
	Size    int64     `json:"size"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// Body is a stored result, read by offset. Close releases it.
type Body interface {
	io.ReaderAt
	Size() int64
	Close() error
}

// Store keeps results behind handles. Implementations are safe for
// concurrent use.
type Store interface {
	// Put keeps body for scope under a new handle for ttl, evicting the
	// oldest handles (of scope's agent, then of anyone) the bounds need.
	// A body over Limits.MaxResultBytes is refused (the caller cuts first).
	Put(ctx context.Context, scope Scope, tool string, body []byte, ttl time.Duration) (string, error)
	// Open returns the body of handle when it is live and scope's: an
	// unknown, expired, malformed or other scope's handle is ok=false,
	// alike. err is the store's own failure (Redis unreachable).
	Open(ctx context.Context, scope Scope, handle string) (b Body, ok bool, err error)
	// Limits are the store's bounds, defaults applied.
	Limits() Limits
}

// ErrTooLarge refuses a body over Limits.MaxResultBytes.
var ErrTooLarge = errors.New("result over the store's bound of one result")

// handlePrefix starts every handle: a reader (and a log search) can tell
// one from other ids.
const handlePrefix = "clawres_"

// handleRandomBytes is a handle's randomness: 160 bits.
const handleRandomBytes = 20

// handleLen is a handle's length in bytes.
const handleLen = len(handlePrefix) + 2*handleRandomBytes

// NewHandle is a new random handle.
func NewHandle() string {
	var b [handleRandomBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("resultstore: no randomness: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	return handlePrefix + hex.EncodeToString(b[:])
}

// ValidHandle reports whether h has a handle's shape (prefix and lower
// hex): a store never looks up anything else, so a file name or a Redis
// key is never made of what a model wrote.
func ValidHandle(h string) bool {
	if len(h) != handleLen || h[:len(handlePrefix)] != handlePrefix {
		return false
	}
	for i := len(handlePrefix); i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// FindHandles adds to into the handles that occur in b: the handles a
// transcript of hidden rounds holds.
func FindHandles(b []byte, into map[string]bool) {
	prefix := []byte(handlePrefix)
	for {
		j := bytes.Index(b, prefix)
		if j < 0 {
			return
		}
		if h := string(b[j:min(len(b), j+handleLen)]); ValidHandle(h) {
			into[h] = true
			b = b[j+handleLen:]
			continue
		}
		b = b[j+len(handlePrefix):]
	}
}
