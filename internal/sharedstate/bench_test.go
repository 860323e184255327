package sharedstate

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/mediate"
)

// BenchmarkTurnStore is a mediated turn's continuity cost in the file
// store and in Redis, in one run: the lookups of a request (one key per
// assistant message of the conversation so far, each holding the hidden
// rounds of its turn: a round of two calls and their results, ~3 KB), as
// the mediator makes them (Get per key; Redis: one GetMany), then the
// claim of the turn's own hidden rounds (PutOnce). turns is how many
// answered turns the conversation already has. redis-per-key reads Redis
// key by key, as a store without GetMany would.
func BenchmarkTurnStore(b *testing.B) {
	hidden := msgs(strings.Repeat("tool round ", 100), strings.Repeat("result ", 150), strings.Repeat("result ", 150))
	url := redisURL(b)
	c, err := Open(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	file, err := mediate.OpenStore(mediate.StoreOptions{Dir: filepath.Join(b.TempDir(), "cont")})
	if err != nil {
		b.Fatal(err)
	}
	red := NewContinuity(c, ContinuityOptions{Pod: "bench"})
	stores := []struct {
		name  string
		s     mediate.ContinuityStore
		batch bool
	}{{"file", file, false}, {"redis", red, true}, {"redis-per-key", red, false}}
	for _, turns := range []int{1, 20} {
		for _, st := range stores {
			b.Run(fmt.Sprintf("turns=%d/%s", turns, st.name), func(b *testing.B) {
				prev := make([]string, turns)
				for i := range prev {
					prev[i] = fmt.Sprintf("%s-%d-prev-%d", st.name, turns, i)
					_ = st.s.Put(context.Background(), prev[i], hidden)
				}
				for b.Loop() {
					var found int
					if st.batch {
						for _, m := range st.s.(mediate.ContinuityBatch).GetMany(context.Background(), prev) {
							found += len(m)
						}
					} else {
						for _, k := range prev {
							m, _ := st.s.Get(context.Background(), k)
							found += len(m)
						}
					}
					if found != turns*len(hidden) {
						b.Fatalf("restored %d messages, want %d", found, turns*len(hidden))
					}
					benchKeys++
					if err := st.s.PutOnce(context.Background(), fmt.Sprintf("new-%d", benchKeys), hidden); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchKeys numbers the keys every run claims (a key is claimed once).
var benchKeys int
