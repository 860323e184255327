package openai

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
	{"", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`,
		"", `{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"x","arguments":"{}"}}]}}]}`},
	{"", `{"choices":[{"index":0,"delta":{"refusal":"no"}}]}`, "", `[DONE]`},
	{"", `{"choices":null,"usage":{"prompt_tokens":1}}`, "", `{"choices":[{"index":-1,"delta":{"content":"\u0000"}}]}`},
}
