package sharedstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/mediate"
)

func open(t *testing.T, url string) *redis.Client {
	t.Helper()
	c, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// outcome names what a store answered, for comparing stores.
func outcome(err error) string {
	var parts []string
	if errors.Is(err, mediate.ErrAmbiguous) {
		parts = append(parts, "ambiguous")
	}
	if errors.Is(err, mediate.ErrEntryTooLarge) {
		parts = append(parts, "too large")
	}
	if err != nil && parts == nil {
		return "error: " + err.Error()
	}
	if parts == nil {
		return "ok"
	}
	return strings.Join(parts, "+")
}

// The Redis store answers every step of a scripted sequence as the file
// store does: claims, second claims, oversized claims, takeovers by Put,
// reads.
func TestSameAnswersAsTheFileStore(t *testing.T) {
	url := redisURL(t)
	file, err := mediate.OpenStore(mediate.StoreOptions{Dir: t.TempDir(), MaxEntryBytes: 300})
	if err != nil {
		t.Fatal(err)
	}
	red := NewContinuity(open(t, url), ContinuityOptions{Pod: "conf", MaxEntryBytes: 300})
	big := msgs(strings.Repeat("x", 400))
	steps := []struct {
		op, key string
		m       []json.RawMessage
	}{
		{"once", "a", msgs("a1")},
		{"get", "a", nil},
		{"once", "a", msgs("a2")}, // a second turn at a: ambiguous
		{"get", "a", nil},
		{"once", "a", msgs("a3")}, // still ambiguous
		{"put", "a", msgs("a4")},  // Put takes the key over
		{"get", "a", nil},
		{"once", "b", big}, // too large, nothing claimed
		{"get", "b", nil},
		{"once", "b", msgs("b1")},
		{"get", "b", nil},
		{"once", "b", big}, // too large, and b was claimed: ambiguous
		{"get", "b", nil},
		{"put", "c", msgs("c1")},
		{"put", "c", big}, // too large: c's entry goes
		{"get", "c", nil},
		{"once", "d", nil}, // nothing to keep
		{"get", "d", nil},
	}
	for i, st := range steps {
		var got [2]string
		for j, s := range []mediate.ContinuityStore{file, red} {
			switch st.op {
			case "once":
				got[j] = outcome(s.PutOnce(context.Background(), st.key, st.m))
			case "put":
				got[j] = outcome(s.Put(context.Background(), st.key, st.m))
			case "get":
				m, ok := s.Get(context.Background(), st.key)
				got[j] = fmt.Sprint(ok, len(m))
				if ok {
					got[j] += " " + string(m[0])
				}
			}
		}
		if got[0] != got[1] {
			t.Errorf("step %d (%s %s): file store %q, Redis %q", i, st.op, st.key, got[0], got[1])
		}
	}
}

// Many replicas claim one key at once: exactly one claim stores, every
// other is told the key is ambiguous, and no replica restores anything.
func TestConcurrentClaimsAcrossReplicas(t *testing.T) {
	url := redisURL(t)
	const replicas, rounds = 8, 20
	stores := make([]*Continuity, replicas)
	for i := range stores {
		stores[i] = NewContinuity(open(t, url), ContinuityOptions{Pod: "race"})
	}
	for r := 0; r < rounds; r++ {
		key := fmt.Sprintf("k%d", r)
		var wg sync.WaitGroup
		errs := make([]error, replicas)
		for i, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.PutOnce(context.Background(), key, msgs(fmt.Sprintf("turn of replica %d", i)))
			}()
		}
		wg.Wait()
		stored := 0
		for _, err := range errs {
			switch {
			case err == nil:
				stored++
			case !errors.Is(err, mediate.ErrAmbiguous):
				t.Fatal(err)
			}
		}
		if stored != 1 {
			t.Fatalf("round %d: %d claims stored, want 1 (%v)", r, stored, errs)
		}
		for i, s := range stores {
			if m, ok := s.Get(context.Background(), key); ok {
				t.Fatalf("round %d: replica %d restored %s from a key claimed %d times", r, i, m[0], replicas)
			}
		}
	}
}

// A claim whose reply was lost and that the client sends again stores
// once; it does not mark its own key.
func TestClaimRetryIsIdempotent(t *testing.T) {
	s := NewContinuity(open(t, redisURL(t)), ContinuityOptions{Pod: "retry"})
	b, err := s.encode(msgs("one"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		n, err := claimScript.Run(context.Background(), s.c, []string{s.prefix + "k", s.marks}, b, s.ttl.Milliseconds(), "k", s.maxMarks).Int()
		if err != nil || n != 1 {
			t.Fatalf("claim %d: %d %v", i, n, err)
		}
	}
	if _, ok := s.Get(context.Background(), "k"); !ok {
		t.Fatal("the entry is gone")
	}
}

// Marks age out after MaxAge (the key can be claimed again) and are
// bounded in number (the oldest go first).
func TestMarksAgeAndBound(t *testing.T) {
	c := open(t, redisURL(t))
	s := NewContinuity(c, ContinuityOptions{Pod: "marks", MaxAge: 300 * time.Millisecond})
	_ = s.PutOnce(context.Background(), "k", msgs("1"))
	if err := s.PutOnce(context.Background(), "k", msgs("2")); !errors.Is(err, mediate.ErrAmbiguous) {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := s.PutOnce(context.Background(), "k", msgs("3")); err != nil {
		t.Fatalf("a claim after the mark aged out: %v", err)
	}
	if n := c.ZCard(context.Background(), s.marks).Val(); n != 0 {
		t.Fatalf("%d aged-out marks kept", n)
	}

	b := NewContinuity(c, ContinuityOptions{Pod: "bound", MaxMarks: 2})
	for _, k := range []string{"x", "y", "z"} {
		_ = b.PutOnce(context.Background(), k, msgs("1"))
		_ = b.PutOnce(context.Background(), k, msgs("2"))
	}
	if n := c.ZCard(context.Background(), b.marks).Val(); n != 2 {
		t.Fatalf("%d marks kept, bound 2", n)
	}
	if err := b.PutOnce(context.Background(), "x", msgs("3")); err != nil {
		t.Fatalf("the oldest mark was kept past the bound: %v", err)
	}
	if err := b.PutOnce(context.Background(), "z", msgs("3")); !errors.Is(err, mediate.ErrAmbiguous) {
		t.Fatalf("the newest mark was dropped: %v", err)
	}
}

// Under memory pressure Redis evicts entries (they expire, so a
// volatile-* policy may take them) but never a mark: a key two
// conversations claimed still restores nothing, and claiming it again is
// still ambiguous.
func TestMarksSurviveEviction(t *testing.T) {
	url := redisURL(t, "--maxmemory", "4mb", "--maxmemory-policy", "volatile-lru")
	c := open(t, url)
	s := NewContinuity(c, ContinuityOptions{Pod: "evict"})
	_ = s.PutOnce(context.Background(), "guarded", msgs("one"))
	if err := s.PutOnce(context.Background(), "guarded", msgs("two")); !errors.Is(err, mediate.ErrAmbiguous) {
		t.Fatal(err)
	}
	filler := msgs(strings.Repeat("f", 20<<10))
	for i := 0; i < 1000; i++ {
		if err := s.PutOnce(context.Background(), fmt.Sprintf("fill-%d", i), filler); err != nil {
			t.Fatalf("fill %d: %v", i, err)
		}
	}
	info := c.Info(context.Background(), "stats").Val()
	if !strings.Contains(info, "evicted_keys:") || strings.Contains(info, "evicted_keys:0\r") {
		t.Fatalf("nothing was evicted; the test proves nothing:\n%s", info)
	}
	if _, ok := s.Get(context.Background(), "guarded"); ok {
		t.Fatal("a marked key restored after eviction")
	}
	if err := s.PutOnce(context.Background(), "guarded", msgs("three")); !errors.Is(err, mediate.ErrAmbiguous) {
		t.Fatalf("a marked key was claimed afresh after eviction: %v", err)
	}
}

// GetMany answers each key as Get does (found, missing, marked) in one
// round trip, and refreshes the TTL of what it found.
func TestGetManyAsGet(t *testing.T) {
	c := open(t, redisURL(t))
	s := NewContinuity(c, ContinuityOptions{Pod: "many", MaxAge: time.Hour})
	_ = s.PutOnce(context.Background(), "found", msgs("f"))
	_ = s.PutOnce(context.Background(), "marked", msgs("1"))
	_ = s.PutOnce(context.Background(), "marked", msgs("2"))
	_ = s.PutOnce(context.Background(), "also", msgs("a1", "a2"))
	c.PExpire(context.Background(), s.prefix+"found", time.Minute)
	keys := []string{"missing", "found", "marked", "also"}
	got := s.GetMany(context.Background(), keys)
	if len(got) != len(keys) {
		t.Fatalf("%d answers for %d keys", len(got), len(keys))
	}
	if ttl := c.PTTL(context.Background(), s.prefix+"found").Val(); ttl < 59*time.Minute {
		t.Errorf("TTL after GetMany %v, want it refreshed to an hour", ttl)
	}
	for i, k := range keys {
		m, ok := s.Get(context.Background(), k)
		if ok != (got[i] != nil) || len(m) != len(got[i]) {
			t.Errorf("%s: GetMany %v, Get %v %v", k, got[i], m, ok)
		}
	}
	lost := NewContinuity(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1}), ContinuityOptions{})
	if got := lost.GetMany(context.Background(), keys); len(got) != len(keys) || got[1] != nil {
		t.Errorf("a lost Redis answered %v", got)
	}
}
