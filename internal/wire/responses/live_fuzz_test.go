package responses

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
	{"response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r","output":[],"status":"in_progress"}}`,
		"response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg","output_index":0,"content_index":0,"delta":"hi"}`},
	{"", `{"type":"response.output_text.delta","delta":"x"}`, "", `{"type":"response.function_call_arguments.delta","delta":"{"}`},
	{"", `{"type":"response.created","response":null}`, "", `{"type":7}`},
}
