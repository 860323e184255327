package responses

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

// benchStream is a streamed answer as the Responses API sends it: one
// message of 300 text deltas, its item and part events, and the
// response.completed event carrying the whole response again.
func benchStream() []wire.Event {
	var ev []wire.Event
	seq := 0
	add := func(typ, rest string) {
		ev = append(ev, wire.Event{Name: typ, Data: fmt.Appendf(nil, `{"type":%q,"sequence_number":%d,%s}`, typ, seq, rest)})
		seq++
	}
	resp := func(status, output, usage string) string {
		return fmt.Sprintf(`"response":{"id":"resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b","object":"response","created_at":1741476542,"status":%q,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4.1-2025-04-14","output":%s,"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":%s,"user":null,"metadata":{}}`, status, output, usage)
	}
	const id = "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b"
	add("response.created", resp("in_progress", "[]", "null"))
	add("response.in_progress", resp("in_progress", "[]", "null"))
	add("response.output_item.added", `"output_index":0,"item":{"id":"`+id+`","type":"message","status":"in_progress","role":"assistant","content":[]}`)
	add("response.content_part.added", `"item_id":"`+id+`","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`)
	var text strings.Builder
	for i := range 300 {
		piece := fmt.Sprintf(" word%d and a few more", i)
		text.WriteString(piece)
		add("response.output_text.delta", fmt.Sprintf(`"item_id":%q,"output_index":0,"content_index":0,"delta":%q,"logprobs":[]`, id, piece))
	}
	part := fmt.Sprintf(`{"type":"output_text","text":%q,"annotations":[]}`, text.String())
	add("response.output_text.done", fmt.Sprintf(`"item_id":%q,"output_index":0,"content_index":0,"text":%q,"logprobs":[]`, id, text.String()))
	add("response.content_part.done", `"item_id":"`+id+`","output_index":0,"content_index":0,"part":`+part)
	item := `{"id":"` + id + `","type":"message","status":"completed","role":"assistant","content":[` + part + `]}`
	add("response.output_item.done", `"output_index":0,"item":`+item)
	add("response.completed", resp("completed", "["+item+"]", `{"input_tokens":328,"input_tokens_details":{"cached_tokens":0},"output_tokens":1200,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":1528}`))
	return ev
}

// BenchmarkAssemble is the history cost of one streamed answer on the
// passthrough path: every event observed, then the result. "unnamed"
// sends the events without their SSE names, as a provider other than
// OpenAI may.
func BenchmarkAssemble(b *testing.B) {
	for _, named := range []bool{true, false} {
		events := benchStream()
		n := 0
		for i, e := range events {
			n += len(e.Data)
			if !named {
				events[i].Name = ""
			}
		}
		b.Run(map[bool]string{true: "named", false: "unnamed"}[named], func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				a := New().NewAssembler()
				for _, e := range events {
					a.Observe(e.Name, e.Data)
				}
				a.Result()
			}
		})
	}
}
