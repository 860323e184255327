package sharedstate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/mediate"
	"github.com/clawdapus/clawgo/internal/owners"
	"github.com/clawdapus/clawgo/internal/testproc"
)

// redisURL starts a redis-server of the test's own, with extra arguments,
// or skips when the binary is missing (.ci/run installs it).
func redisURL(tb testing.TB, extra ...string) string {
	tb.Helper()
	return testproc.Redis(tb, extra...)
}

func msgs(s ...string) []json.RawMessage {
	var out []json.RawMessage
	for _, m := range s {
		out = append(out, json.RawMessage(`{"role":"assistant","content":"`+m+`"}`))
	}
	return out
}

// Two replicas' stores on one Redis: what one puts the other gets; a key
// both claim with PutOnce is ambiguous on both; an entry over the cap is
// refused and drops the key; entries expire.
func TestContinuityAcrossReplicas(t *testing.T) {
	url := redisURL(t)
	c1, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, _ := Open(context.Background(), url)
	defer c2.Close()
	a := NewContinuity(c1, ContinuityOptions{Pod: "desk", MaxEntryBytes: 200, MaxAge: time.Hour})
	b := NewContinuity(c2, ContinuityOptions{Pod: "desk", MaxEntryBytes: 200, MaxAge: time.Hour})
	if err := a.PutOnce(context.Background(), "k1", msgs("one")); err != nil {
		t.Fatal(err)
	}
	got, ok := b.Get(context.Background(), "k1")
	if !ok || len(got) != 1 || !strings.Contains(string(got[0]), "one") {
		t.Fatalf("replica b got %v %v", got, ok)
	}
	if err := b.PutOnce(context.Background(), "k1", msgs("two")); !errors.Is(err, mediate.ErrAmbiguous) {
		t.Fatalf("second claim: %v", err)
	}
	if _, ok := a.Get(context.Background(), "k1"); ok {
		t.Fatal("an ambiguous key restored on a")
	}
	if err := a.Put(context.Background(), "big", msgs(strings.Repeat("x", 500))); !errors.Is(err, mediate.ErrEntryTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
	if a.Len() != 1 {
		t.Fatalf("Len = %d, want 1 (the ambiguity mark)", a.Len())
	}
	other := NewContinuity(c1, ContinuityOptions{Pod: "other"})
	if _, ok := other.Get(context.Background(), "k1"); ok {
		t.Fatal("pods share keys")
	}
	short := NewContinuity(c1, ContinuityOptions{Pod: "ttl", MaxAge: time.Second})
	_ = short.Put(context.Background(), "k", msgs("soon gone"))
	if ttl := c1.TTL(context.Background(), "cllama:ttl:cont:k").Val(); ttl <= 0 || ttl > time.Second {
		t.Fatalf("TTL %v", ttl)
	}
}

// An unreachable Redis is an error at start, naming the setting and
// hiding the password; a Redis lost later reads as no entry.
func TestOpenAndLoss(t *testing.T) {
	_, err := Open(context.Background(), "redis://:hunter2@127.0.0.1:1/0")
	if err == nil || !strings.Contains(err.Error(), "CLLAMA_STATE_URL") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Open(context.Background(), "http://x"); err == nil {
		t.Fatal("a non-redis URL was accepted")
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	if _, ok := NewContinuity(c, ContinuityOptions{}).Get(context.Background(), "k"); ok {
		t.Fatal("a lost Redis returned an entry")
	}
}

// A response one replica saw created is its agent's on every replica.
func TestOwnersAcrossReplicas(t *testing.T) {
	url := redisURL(t)
	c1, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, _ := Open(context.Background(), url)
	defer c2.Close()
	a, b := NewOwners(c1, "desk", 0), NewOwners(c2, "desk", 0)
	if err := a.Record("resp_1", owners.Owner{Agent: "researcher", Provider: "openai", Conversation: "c0ffee"}); err != nil {
		t.Fatal(err)
	}
	// The conversation the response belongs to travels with its owner.
	if o, ok := b.Owner("resp_1"); !ok || o.Agent != "researcher" || o.Provider != "openai" || o.Conversation != "c0ffee" {
		t.Fatalf("replica b: %+v %v", o, ok)
	}
	if _, ok := NewOwners(c2, "other-pod", 0).Owner("resp_1"); ok {
		t.Fatal("pods share owners")
	}
	if err := b.Forget("resp_1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Owner("resp_1"); ok {
		t.Fatal("a forgotten id is still owned")
	}
	if err := a.Record(strings.Repeat("x", owners.MaxIDBytes+1), owners.Owner{Agent: "x"}); !errors.Is(err, owners.ErrInvalidID) {
		t.Fatalf("overlong id: %v", err)
	}
}
