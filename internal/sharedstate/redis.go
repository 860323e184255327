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
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/continuity"
)

// DefaultOpTimeout bounds one Redis operation.
const DefaultOpTimeout = 2 * time.Second

// Open connects to url (redis://[user:password@]host:port[/db]) and checks
// the server answers. Its errors never show the URL's user information.
func Open(ctx context.Context, url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("CLLAMA_STATE_URL: %s (want redis://[user:password@]host:port[/db])", parseError(url))
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

// parseError says why url is not a Redis URL without quoting its user
// information: the parser's errors quote the URL, or the part of it they
// could not read, which may be the password. It parses the URL again
// with the user information replaced; when that one parses, the user
// information was what was wrong.
func parseError(url string) string {
	const placeholder = "redacted"
	_, err := redis.ParseURL(hideUserinfo(url, placeholder))
	if err == nil {
		return "the user name or password is malformed (percent-encode reserved characters)"
	}
	return strings.ReplaceAll(err.Error(), placeholder+"@", "…@")
}

// redactURL hides the user information (a password) of a Redis URL.
func redactURL(u string) string { return hideUserinfo(u, "…") }

// scheme is a URL's scheme and, when present, the "//" after it.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:(//)?`)

// hideUserinfo replaces everything between u's scheme and its last "@"
// with with: the user information, and more when an "@" follows it (too
// much hidden, never too little).
func hideUserinfo(u, with string) string {
	at := strings.LastIndex(u, "@")
	if at < 0 {
		return u
	}
	start := len(scheme.FindString(u[:at]))
	return u[:start] + with + u[at:]
}

// Continuity is a continuity.Store in Redis. An entry is one
// string key, cllama:<pod>:cont:<key>, holding the hidden messages and
// expiring after MaxAge unused (every read refreshes it). The ambiguity
// marks are apart, in the sorted set cllama:<pod>:marks (key → when the
// mark ages out), which has no TTL of its own: under a volatile-* memory
// policy Redis may evict entries for room but never the marks, so a key
// two conversations claimed stays unrestorable for as long as its mark
// lives, as in the file store. The set is bounded by MaxMarks (the
// oldest go first) and pruned of aged-out marks on every claim. A claim
// is one Lua script, so two replicas claiming one key at once end with
// the key marked on both, whatever the interleaving.
type Continuity struct {
	c             *redis.Client
	prefix        string
	marks         string
	maxEntryBytes int64
	maxMarks      int
	ttl           time.Duration

	// lenMu guards the last count of entries (a SCAN, reused for a while:
	// metrics read it twice per scrape).
	lenMu   sync.Mutex
	lenAt   time.Time
	lenLast int
}

var (
	_ continuity.Batch   = (*Continuity)(nil)
	_ continuity.Counter = (*Continuity)(nil)
)

// ContinuityOptions configure a Continuity.
type ContinuityOptions struct {
	// Pod namespaces the keys (cllama:<pod>:cont:<key>).
	Pod string
	// MaxEntryBytes bounds one entry (default 4 MiB).
	MaxEntryBytes int64
	// MaxAge is the entries' TTL, refreshed on each read, and how long a
	// mark guards its key after the last claim (default 7 days).
	MaxAge time.Duration
	// MaxMarks bounds the ambiguity marks kept (default DefaultMaxMarks).
	MaxMarks int
}

// DefaultMaxMarks bounds the ambiguity marks of a pod: four per entry of
// the file store's default bound, as the file store remembers (a mark is
// its key, about 100 bytes in Redis).
const DefaultMaxMarks = 4 * continuity.DefaultMaxEntries

// lenEvery is how long a count of entries is reused.
const lenEvery = 10 * time.Second

// NewContinuity returns the continuity store on c.
func NewContinuity(c *redis.Client, o ContinuityOptions) *Continuity {
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = continuity.DefaultMaxEntryBytes
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 7 * 24 * time.Hour
	}
	if o.MaxMarks <= 0 {
		o.MaxMarks = DefaultMaxMarks
	}
	base := "cllama:" + o.Pod + ":"
	return &Continuity{c: c, prefix: base + "cont:", marks: base + "marks", maxEntryBytes: o.MaxEntryBytes, maxMarks: o.MaxMarks, ttl: o.MaxAge}
}

// entry is what an entry key holds.
type entry struct {
	Stored   time.Time         `json:"stored"`
	Messages []json.RawMessage `json:"messages"`
}

// opCtx bounds one Redis operation of a request: by the request's own
// context and by DefaultOpTimeout.
func opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, DefaultOpTimeout)
}

// Get implements continuity.Store. A read refreshes the TTL; an
// unreachable Redis reads as no entry (the model repeats the hidden calls,
// nothing else is lost). A marked key has no entry: the claim that marked
// it deleted it in the same script.
func (s *Continuity) Get(ctx context.Context, key string) ([]json.RawMessage, bool) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	b, err := s.c.GetEx(ctx, s.prefix+key, s.ttl).Bytes()
	if err != nil {
		return nil, false
	}
	return decode(b)
}

// GetMany implements continuity.Batch: one pipeline of GETEX (each
// found entry's TTL refreshed, as Get does), one round trip for every
// assistant message of a conversation. An unreachable Redis finds none.
func (s *Continuity) GetMany(ctx context.Context, keys []string) [][]json.RawMessage {
	out := make([][]json.RawMessage, len(keys))
	ctx, cancel := opCtx(ctx)
	defer cancel()
	cmds := make([]*redis.StringCmd, len(keys))
	pipe := s.c.Pipeline()
	for i, k := range keys {
		cmds[i] = pipe.GetEx(ctx, s.prefix+k, s.ttl)
	}
	_, _ = pipe.Exec(ctx) // a missing key is redis.Nil in its own command
	for i, c := range cmds {
		if b, err := c.Bytes(); err == nil {
			out[i], _ = decode(b)
		}
	}
	return out
}

func decode(b []byte) ([]json.RawMessage, bool) {
	var e entry
	if json.Unmarshal(b, &e) != nil || len(e.Messages) == 0 {
		return nil, false
	}
	return e.Messages, true
}

// putScript stores an entry and lifts the key's mark (Put takes a key
// over, as the file store's does), or, with no entry (ARGV[1] is ""),
// drops both.
//
// KEYS: entry, marks. ARGV: entry or "", TTL (ms), member.
var putScript = redis.NewScript(`
redis.call('ZREM', KEYS[2], ARGV[3])
if ARGV[1] == '' then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// claimScript is PutOnce, whole or not at all. It answers 1 when the entry
// was stored (or already was, byte for byte: a retry of the same claim
// after a lost reply), 0 when the key is now marked ambiguous, 2 when an
// oversized claim (ARGV[1] is "") found the key unclaimed and left it so.
// Time is Redis's own, one clock for every replica.
//
// KEYS: entry, marks. ARGV: entry or "", TTL (ms), member, max marks.
var claimScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local claimed = redis.call('ZSCORE', KEYS[2], ARGV[3])
if not claimed then
  local cur = redis.call('GET', KEYS[1])
  if not cur then
    if ARGV[1] == '' then return 2 end
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
    return 1
  end
  if cur == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ttl)
    return 1
  end
end
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[2], now + ttl, ARGV[3])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if over > 0 then redis.call('ZREMRANGEBYRANK', KEYS[2], 0, over - 1) end
return 0
`)

// Put implements continuity.Store: it returns once Redis stored the
// entry. An entry over MaxEntryBytes is refused with ErrEntryTooLarge and
// drops the key's entry.
func (s *Continuity) Put(ctx context.Context, key string, messages []json.RawMessage) error {
	if len(messages) == 0 {
		return nil
	}
	b, tooLarge := s.encode(messages)
	if tooLarge != nil && !errors.Is(tooLarge, continuity.ErrEntryTooLarge) {
		return tooLarge
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	if err := putScript.Run(ctx, s.c, []string{s.prefix + key, s.marks}, b, s.ttl.Milliseconds(), key).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	return tooLarge
}

// PutOnce implements continuity.Store: the first claim of a key
// stores its entry; any later claim, from this replica or another, marks
// the key ambiguous (ErrAmbiguous) and drops the entry, and Get finds
// nothing under it until the mark ages out. An oversized claim stores
// nothing: ErrEntryTooLarge, or ErrAmbiguous when it marked a key already
// claimed. It returns once Redis has run the claim.
func (s *Continuity) PutOnce(ctx context.Context, key string, messages []json.RawMessage) error {
	if len(messages) == 0 {
		return nil
	}
	b, tooLarge := s.encode(messages)
	if tooLarge != nil && !errors.Is(tooLarge, continuity.ErrEntryTooLarge) {
		return tooLarge
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	n, err := claimScript.Run(ctx, s.c, []string{s.prefix + key, s.marks}, b, s.ttl.Milliseconds(), key, s.maxMarks).Int()
	switch {
	case err != nil:
		return err
	case n == 0:
		// As the file store answers: the key's state is what counts.
		return continuity.ErrAmbiguous
	}
	return tooLarge
}

// encode is an entry's bytes; over the cap it is "" and ErrEntryTooLarge
// (the scripts then store nothing).
func (s *Continuity) encode(messages []json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(entry{Stored: time.Now().UTC(), Messages: messages})
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > s.maxEntryBytes {
		return []byte{}, fmt.Errorf("%w: %d bytes, over the cap of %d bytes per entry", continuity.ErrEntryTooLarge, len(b), s.maxEntryBytes)
	}
	return b, nil
}

// Len counts the pod's entries and marks: a SCAN of the key space, for
// metrics scrapes, not requests; a count is reused for lenEvery. An
// unreachable Redis counts what it could (0).
func (s *Continuity) Len() int {
	s.lenMu.Lock()
	defer s.lenMu.Unlock()
	if !s.lenAt.IsZero() && time.Since(s.lenAt) < lenEvery {
		return s.lenLast
	}
	ctx, cancel := opCtx(context.Background()) // a scrape's, not a request's
	defer cancel()
	n := 0
	it := s.c.Scan(ctx, 0, s.prefix+"*", 1000).Iterator()
	for it.Next(ctx) {
		n++
	}
	marks, _ := s.c.ZCard(ctx, s.marks).Result()
	s.lenAt, s.lenLast = time.Now(), n+int(marks)
	return s.lenLast
}

// A Continuity does not count its bytes (entries expire on their own;
// Redis's INFO memory says what they take): it is a continuity.Counter,
// not a Sizer, and its bytes are not reported.
