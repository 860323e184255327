package anthropic

import (
	"fmt"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

// benchStream is a streamed answer as the Messages API sends it: 300 text
// deltas of a few words, between the message's and the block's start and
// end events.
func benchStream() []wire.Event {
	ev := []wire.Event{
		{Name: "message_start", Data: []byte(`{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}}`)},
		{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
		{Name: "ping", Data: []byte(`{"type": "ping"}`)},
	}
	for i := range 300 {
		ev = append(ev, wire.Event{Name: "content_block_delta", Data: fmt.Appendf(nil, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word%d and a few more"}}`, i)})
	}
	return append(ev,
		wire.Event{Name: "content_block_stop", Data: []byte(`{"type":"content_block_stop","index":0}`)},
		wire.Event{Name: "message_delta", Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1200}}`)},
		wire.Event{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)},
	)
}

// BenchmarkAssemble is the history cost of one streamed answer on the
// passthrough path: every event observed, then the result.
func BenchmarkAssemble(b *testing.B) {
	events := benchStream()
	n := 0
	for _, e := range events {
		n += len(e.Data)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		a := New().NewAssembler()
		for _, e := range events {
			a.Observe(e.Name, e.Data)
		}
		a.Result()
	}
}
