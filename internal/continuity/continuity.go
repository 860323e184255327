// Package continuity is the contract of the store that keeps mediated
// turns' hidden tool rounds between turns (internal/mediate "Continuity"):
// the interface, its errors and its default bounds. It holds no store:
// mediate has the one on local disk (or in memory), sharedstate the one in
// Redis that cllama replicas share; each implements Store without
// importing the other.
package continuity

import (
	"context"
	"encoding/json"
	"errors"
)

// Store keeps hidden messages by key. Every implementation keeps the same
// rules: entries are bounded (an entry over the per-entry cap is refused
// with ErrEntryTooLarge), PutOnce's second claim of a key makes it
// ambiguous for good, and Get never returns what was not stored whole.
// ctx bounds a store across the network; a store on local disk may ignore
// it. Implementations are safe for concurrent use.
type Store interface {
	// Get returns the messages under key (false: none, or ambiguous).
	Get(ctx context.Context, key string) ([]json.RawMessage, bool)
	// Put stores messages under key; it returns once they are stored.
	Put(ctx context.Context, key string, messages []json.RawMessage) error
	// PutOnce stores messages under a key that must name one entry for
	// good: a second claim marks the key ambiguous (ErrAmbiguous).
	PutOnce(ctx context.Context, key string, messages []json.RawMessage) error
}

// Batch is a Store that reads many keys in one go. A request looks up
// every assistant message of its conversation; a store across the
// network answers them in one round trip rather than one per message.
// Keys it does not find (or finds ambiguous) are nil in the answer, and
// what it returns is what Get would have, key by key.
type Batch interface {
	Store
	GetMany(ctx context.Context, keys []string) [][]json.RawMessage
}

// Sizer is a Store that knows its size, for metrics: how many entries
// and how many bytes they hold. A store that cannot count its bytes
// cheaply (Redis, whose entries expire on their own) does not implement
// it, and its size is not reported.
type Sizer interface {
	Len() int
	Bytes() int64
}

// Counter is a Store that knows how many entries it holds but not their
// bytes.
type Counter interface {
	Len() int
}

// Default bounds of a store.
const (
	DefaultMaxEntries    = 4096
	DefaultMaxBytes      = 64 << 20
	DefaultMaxEntryBytes = 4 << 20
)

// ErrEntryTooLarge is returned by Put and PutOnce for an entry over the
// per-entry cap; the entry is not kept.
var ErrEntryTooLarge = errors.New("continuity entry too large")

// ErrAmbiguous is returned by PutOnce for a key that already had an
// entry: the key is kept as ambiguous and restores nothing from then on.
var ErrAmbiguous = errors.New("continuity key claimed twice")
