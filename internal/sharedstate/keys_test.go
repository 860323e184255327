package sharedstate

import (
	"context"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/keypool"
)

// TestKeyCooldownSharedByReplicas: three replicas on one Redis; a key one
// of them saw limited is skipped by the other two, and by a replica that
// starts later.
func TestKeyCooldownSharedByReplicas(t *testing.T) {
	url := redisURL(t)
	keys := []keypool.Key{{ID: "a", Fingerprint: keypool.Fingerprint("k-a")}, {ID: "b", Fingerprint: keypool.Fingerprint("k-b")}}
	replica := func() (*keypool.Pools, *keypool.Provider) {
		c, err := Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		ps, err := keypool.New(keypool.Options{Shared: NewKeyStates(c, "pod1")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ps.Close() })
		return ps, ps.Provider("openai", keys, "gen1")
	}
	_, one := replica()
	_, two := replica()
	_, three := replica()

	pick := one.Pick(0)
	if pick.Key != 0 {
		t.Fatalf("first pick %+v", pick)
	}
	one.Done(pick, keypool.Limited, time.Minute, true)

	// The others learn it from Redis's channel: wait (bounded) until
	// both skip key a.
	for _, p := range []*keypool.Provider{two, three} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			if p.Pick(1<<1).Status == keypool.Cooling {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a replica never saw the cooldown")
			}
			time.Sleep(10 * time.Millisecond)
		}
		for range 4 {
			if got := p.Pick(0); got.Key != 1 {
				t.Fatalf("a replica picked %+v; key a is cooling", got)
			}
		}
	}
	_, late := replica()
	if got := late.Pick(1 << 1); got.Status != keypool.Cooling {
		t.Fatalf("a replica started later picked %+v; key a is cooling", got)
	}
}
