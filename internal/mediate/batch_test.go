package mediate

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
)

// batchStore is a Store read through GetMany, counting how it is read.
type batchStore struct {
	*Store
	gets, batches, keys atomic.Int64
}

func (b *batchStore) Get(ctx context.Context, key string) ([]json.RawMessage, bool) {
	b.gets.Add(1)
	return b.Store.Get(ctx, key)
}

func (b *batchStore) GetMany(_ context.Context, keys []string) [][]json.RawMessage {
	b.batches.Add(1)
	b.keys.Add(int64(len(keys)))
	out := make([][]json.RawMessage, len(keys))
	for i, k := range keys {
		out[i], _ = b.Store.Get(context.Background(), k)
	}
	return out
}

// A store that reads many keys at once is asked once per request, for
// every assistant message, and restores what Get would have: hidden
// rounds of two earlier turns go back before their answers.
func TestBatchLookupRestoresLikeGet(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			st, err := OpenStore(StoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			bs := &batchStore{Store: st}
			h := newHarness(t, k, harnessOptions{continuity: bs})
			h.up.script = []step{
				{Calls: []tcall{call("c1", echo, `{"q":"a"}`)}}, {Text: "answer1"},
				{Calls: []tcall{call("c2", echo, `{"q":"b"}`)}}, {Text: "answer2"},
				{Text: "answer3"},
			}
			ctx := context.Background()
			k.decodeFinal(t, h.post(ctx, k.runnerRequest([]tmsg{{Role: "user", Text: "q1"}}, []string{"shell"}, false, nil)), false)
			turn2 := []tmsg{{Role: "user", Text: "q1"}, {Role: "assistant", Text: "answer1"}, {Role: "user", Text: "q2"}}
			k.decodeFinal(t, h.post(ctx, k.runnerRequest(turn2, []string{"shell"}, false, nil)), false)
			turn3 := append(turn2, tmsg{Role: "assistant", Text: "answer2"}, tmsg{Role: "user", Text: "q3"})
			k.decodeFinal(t, h.post(ctx, k.runnerRequest(turn3, []string{"shell"}, false, nil)), false)
			up := h.up.requests()
			want := "user(q1) assistant:c1 tool:c1 assistant(answer1) user(q2) assistant:c2 tool:c2 assistant(answer2) user(q3)"
			if got := roles(up[len(up)-1].Msgs); got != want {
				t.Errorf("turn 3 upstream transcript:\n got %s\nwant %s", got, want)
			}
			// Turn 1 has no assistant message, turns 2 and 3 one and two.
			if g, b, n := bs.gets.Load(), bs.batches.Load(), bs.keys.Load(); g != 0 || b != 2 || n != 3 {
				t.Errorf("read with %d Gets, %d GetMany of %d keys; want 0, 2, 3", g, b, n)
			}
		})
	}
}
