// Package sharedstate keeps cllama's state in Redis (CLLAMA_STATE_URL=
// redis://…) so that several cllama replicas share it: the continuity of
// conversations' hidden tool rounds, and the owners of stored responses.
// Entries are bounded in size and expire (TTL); a write returns only once
// Redis acknowledged it, so what a runner was answered with is on every
// replica before the answer leaves.
package sharedstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/mediate"
)

// DefaultOpTimeout bounds one Redis operation.
const DefaultOpTimeout = 2 * time.Second

// Open connects to url (redis://[user:password@]host:port[/db]) and checks
// the server answers.
func Open(ctx context.Context, url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("CLLAMA_STATE_URL: %w (want redis://host:port[/db])", err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 5*time.Second, DefaultOpTimeout, DefaultOpTimeout
	c := redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("CLLAMA_STATE_URL: %s does not answer: %w", redactURL(url), err)
	}
	return c, nil
}

// redactURL hides a password in a Redis URL.
func redactURL(u string) string {
	if at := strings.LastIndex(u, "@"); at >= 0 {
		if scheme := strings.Index(u, "://"); scheme >= 0 && scheme < at {
			return u[:scheme+3] + "…@" + u[at+1:]
		}
	}
	return u
}

// Continuity is a mediate.ContinuityStore in Redis.
type Continuity struct {
	c             *redis.Client
	prefix        string
	maxEntryBytes int64
	ttl           time.Duration
}

var _ mediate.ContinuityStore = (*Continuity)(nil)

// ContinuityOptions configure a Continuity.
type ContinuityOptions struct {
	// Pod namespaces the keys (cllama:<pod>:cont:<key>).
	Pod string
	// MaxEntryBytes bounds one entry (default 4 MiB).
	MaxEntryBytes int64
	// MaxAge is the entries' TTL, refreshed on each read (default 7 days).
	MaxAge time.Duration
}

// NewContinuity returns the continuity store on c.
func NewContinuity(c *redis.Client, o ContinuityOptions) *Continuity {
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = mediate.DefaultContinuityMaxEntryBytes
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 7 * 24 * time.Hour
	}
	return &Continuity{c: c, prefix: "cllama:" + o.Pod + ":cont:", maxEntryBytes: o.MaxEntryBytes, ttl: o.MaxAge}
}

// entry is what a key holds: messages, or the ambiguity mark.
type entry struct {
	Stored    time.Time         `json:"stored"`
	Messages  []json.RawMessage `json:"messages,omitempty"`
	Ambiguous bool              `json:"ambiguous,omitempty"`
}

func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), DefaultOpTimeout)
}

// Get implements mediate.ContinuityStore. A read refreshes the TTL; an
// unreachable Redis reads as no entry (the model repeats the hidden calls,
// nothing else is lost).
func (s *Continuity) Get(key string) ([]json.RawMessage, bool) {
	ctx, cancel := opCtx()
	defer cancel()
	b, err := s.c.GetEx(ctx, s.prefix+key, s.ttl).Bytes()
	if err != nil {
		return nil, false
	}
	var e entry
	if json.Unmarshal(b, &e) != nil || e.Ambiguous || len(e.Messages) == 0 {
		return nil, false
	}
	return e.Messages, true
}

// Put implements mediate.ContinuityStore.
func (s *Continuity) Put(key string, messages []json.RawMessage) error {
	if len(messages) == 0 {
		return nil
	}
	b, err := s.encode(key, messages)
	if err != nil {
		return err
	}
	ctx, cancel := opCtx()
	defer cancel()
	return s.c.Set(ctx, s.prefix+key, b, s.ttl).Err()
}

// PutOnce implements mediate.ContinuityStore: SET NX claims the key on
// every replica at once; a key already claimed (by this replica or
// another) becomes the ambiguity mark, which Get never restores.
func (s *Continuity) PutOnce(key string, messages []json.RawMessage) error {
	if len(messages) == 0 {
		return nil
	}
	b, err := s.encode(key, messages)
	if err != nil {
		return err
	}
	ctx, cancel := opCtx()
	defer cancel()
	ok, err := s.c.SetNX(ctx, s.prefix+key, b, s.ttl).Result()
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	mark, _ := json.Marshal(entry{Stored: time.Now().UTC(), Ambiguous: true})
	if err := s.c.Set(ctx, s.prefix+key, mark, s.ttl).Err(); err != nil {
		return err
	}
	return mediate.ErrAmbiguous
}

func (s *Continuity) encode(key string, messages []json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(entry{Stored: time.Now().UTC(), Messages: messages})
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > s.maxEntryBytes {
		ctx, cancel := opCtx()
		defer cancel()
		_ = s.c.Del(ctx, s.prefix+key).Err()
		return nil, mediate.ErrEntryTooLarge
	}
	return b, nil
}

// Len counts the pod's entries (a SCAN: for metrics scrapes, not requests).
func (s *Continuity) Len() int {
	ctx, cancel := opCtx()
	defer cancel()
	n := 0
	it := s.c.Scan(ctx, 0, s.prefix+"*", 1000).Iterator()
	for it.Next(ctx) {
		n++
	}
	if errors.Is(it.Err(), context.DeadlineExceeded) {
		return n
	}
	return n
}

// Bytes is not tracked in Redis (its own INFO memory says it); 0.
func (s *Continuity) Bytes() int64 { return 0 }
