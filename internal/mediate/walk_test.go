package mediate

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/formats"
)

// hiddenStore has hidden rounds under every key: what restore returns then
// depends on every key it computed and where it put each round.
type hiddenStore struct{ *Store }

func (hiddenStore) Get(_ context.Context, key string) ([]json.RawMessage, bool) {
	return []json.RawMessage{json.RawMessage(`{"role":"tool","content":"` + key[:12] + `"}`)}, true
}

// A walk only shortens the work: over conversations that grow, alternate,
// are edited in the middle, cut short and given system messages, restore
// with the memo of every earlier request returns exactly what it returns
// with a memo of nothing.
func TestRestoreWalkMatchesAFreshWalk(t *testing.T) {
	st, err := OpenStore(StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := hiddenStore{st}
	for _, fm := range formats.All() {
		f, ok := fm.(wire.ToolLoop)
		if !ok {
			continue
		}
		t.Run(f.Name(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			msg := func(role, text string) json.RawMessage {
				return json.RawMessage(fmt.Sprintf(`{"role":%q,"content":%q}`, role, text))
			}
			convs := [][]json.RawMessage{{msg("user", "a0")}, {msg("user", "b0")}}
			memo := newCanonCache(canonCacheSize)
			walked := 0
			for i := range 400 {
				n := rng.IntN(len(convs))
				conv := convs[n]
				switch r := rng.IntN(10); {
				case r < 5: // the next turn
					conv = append(conv, msg("assistant", fmt.Sprintf("answer %d", i)), msg("user", fmt.Sprintf("q %d", i)))
				case r == 5 && len(conv) > 2: // an edit in the middle
					conv = slices.Clone(conv)
					conv[rng.IntN(len(conv)-1)] = msg("user", fmt.Sprintf("edited %d", i))
				case r == 6 && len(conv) > 3: // cut short
					conv = conv[:1+rng.IntN(len(conv)-1)]
				case r == 7: // a system message
					conv = slices.Insert(slices.Clone(conv), rng.IntN(len(conv)), msg("system", fmt.Sprintf("feed %d", i)))
				case r == 8: // the same request again
				default: // another last message
					conv = slices.Clone(conv)
					conv[len(conv)-1] = msg("user", fmt.Sprintf("instead %d", i))
				}
				convs[n] = conv
				if prev := memo.walk(walkKey{format: f.Name(), agent: "a"}); prev != nil && prev.shared(conv) > 0 {
					walked++
				}
				got, gotChain, _ := restore(context.Background(), f, memo, store, "a", conv)
				want, wantChain, _ := restore(context.Background(), f, newCanonCache(canonCacheSize), store, "a", conv)
				if gotChain != wantChain || !slices.EqualFunc(got, want, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
					t.Fatalf("request %d (%d messages): with the walk\n%s\nwithout\n%s", i, len(conv), joinRaw(got), joinRaw(want))
				}
			}
			if walked < 100 {
				t.Errorf("only %d of 400 requests shared a prefix with the walk: the test does not exercise it", walked)
			}
		})
	}
}

func joinRaw(msgs []json.RawMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		b.Write(m)
		b.WriteByte('\n')
	}
	return b.String()
}

// Walks are bounded: one per agent and format, each at most maxWalkBytes
// of transcript, all together about maxWalksBytes.
func TestWalksAreBounded(t *testing.T) {
	memo := newCanonCache(canonCacheSize)
	big := json.RawMessage(`"` + strings.Repeat("x", 300<<10) + `"`)
	msgs := []json.RawMessage{big, big, big, big, big}
	steps := make([]walkStep, len(msgs))
	for i := range 200 {
		w := newWalk(msgs, steps, 0)
		if len(w.raw) > maxWalkBytes || len(w.ends) != 3 {
			t.Fatalf("a walk of %d bytes, %d messages; want the 3 that fit in %d", len(w.raw), len(w.ends), maxWalkBytes)
		}
		memo.putWalk(walkKey{format: "f", agent: fmt.Sprint(i)}, w)
		if memo.walkBytes > maxWalksBytes+w.size() {
			t.Fatalf("%d bytes of walks after %d agents; bound %d", memo.walkBytes, i+1, maxWalksBytes)
		}
	}
	if w := newWalk(msgs, steps, 3); w != nil {
		t.Error("a walk no longer than the one stored was built again")
	}
}
