package anthropic

import (
	"encoding/json"
	"testing"
)

// FuzzLiveObserve feeds a live encoder provider events it may never have
// seen: it must not panic, and every event it sends the runner is JSON.
func FuzzLiveObserve(f *testing.F) {
	for _, seed := range liveSeeds {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, n1, d1, n2, d2 string) {
		l := Format{}.NewLive(true)
		for _, ev := range [][2]string{{n1, d1}, {n2, d2}, {n1, d1}} {
			if ev[1] == "" {
				continue
			}
			out, err := l.Observe(ev[0], []byte(ev[1]))
			if err != nil {
				continue
			}
			for _, e := range out {
				if !json.Valid(e.Data) {
					t.Fatalf("event %q is not JSON: %s", e.Name, e.Data)
				}
			}
		}
		if _, err := l.EndRound(); err != nil {
			t.Fatal(err)
		}
	})
}

var liveSeeds = [][4]string{
	{"message_start", `{"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}`,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
		"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"x","input":{}}}`},
	{"", `{"type":"content_block_stop","index":7}`, "", `{"type":"content_block_start","index":-1}`},
}
