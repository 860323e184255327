package formats

import (
	"encoding/json"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

// FuzzLiveObserve feeds every format's live encoder provider events it may
// never have seen (each format's own, and the others'): it must not
// panic, and every event it sends the runner is JSON.
func FuzzLiveObserve(f *testing.F) {
	for _, seed := range liveSeeds {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	var lives []wire.LiveStreaming
	for _, wf := range All() {
		if ls, ok := wf.(wire.LiveStreaming); ok {
			lives = append(lives, ls)
		}
	}
	if len(lives) == 0 {
		f.Fatal("no format streams text live")
	}
	f.Fuzz(func(t *testing.T, n1, d1, n2, d2 string) {
		for _, ls := range lives {
			l := ls.NewLive(true)
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
						t.Fatalf("%T: event %q is not JSON: %s", ls, e.Name, e.Data)
					}
				}
			}
			if _, err := l.EndRound(); err != nil {
				t.Fatalf("%T: %v", ls, err)
			}
		}
	})
}

var liveSeeds = [][4]string{
	// openai
	{"", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`,
		"", `{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"x","arguments":"{}"}}]}}]}`},
	{"", `{"choices":[{"index":0,"delta":{"refusal":"no"}}]}`, "", `[DONE]`},
	{"", `{"choices":null,"usage":{"prompt_tokens":1}}`, "", `{"choices":[{"index":-1,"delta":{"content":"\u0000"}}]}`},
	// anthropic
	{"message_start", `{"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}`,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
		"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"x","input":{}}}`},
	{"", `{"type":"content_block_stop","index":7}`, "", `{"type":"content_block_start","index":-1}`},
	// responses
	{"response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r","output":[],"status":"in_progress"}}`,
		"response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg","output_index":0,"content_index":0,"delta":"hi"}`},
	{"", `{"type":"response.output_text.delta","delta":"x"}`, "", `{"type":"response.function_call_arguments.delta","delta":"{"}`},
	{"", `{"type":"response.created","response":null}`, "", `{"type":7}`},
}
