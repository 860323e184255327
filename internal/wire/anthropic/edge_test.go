package anthropic

import (
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

func TestUsage(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		prompt int
		out    int
		ok     bool
	}{
		{"usage", `{"type":"message","usage":{"input_tokens":7,"output_tokens":4}}`, 7, 4, true},
		{"cache", `{"usage":{"input_tokens":7,"cache_creation_input_tokens":10,"cache_read_input_tokens":100,"output_tokens":4}}`, 117, 4, true},
		{"no usage", `{"content":[]}`, 0, 0, false},
		{"null usage", `{"usage":null}`, 0, 0, false},
		{"not json", `"usage" oops`, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, ok := New().Usage([]byte(tt.body))
			if u.Prompt() != tt.prompt || u.Output != tt.out || ok != tt.ok {
				t.Fatalf("got %+v %v, want prompt %d out %d %v", u, ok, tt.prompt, tt.out, tt.ok)
			}
		})
	}
}

func TestObserveStream(t *testing.T) {
	var st wire.StreamState
	for _, e := range [][2]string{
		{"message_start", `{"type":"message_start","message":{"id":"m","usage":{"input_tokens":25,"cache_read_input_tokens":5,"output_tokens":1}}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`},
	} {
		st = New().ObserveStream(st, e[0], []byte(e[1]))
	}
	if !st.HaveUsage || st.Usage.Prompt() != 30 || st.Usage.Output != 15 {
		t.Fatalf("%+v", st)
	}
	if !st.Done() || st.Terminal {
		t.Fatalf("a stop reason is an end, not the terminal event: %+v", st)
	}
	if st = New().ObserveStream(st, "message_stop", []byte(`{"type":"message_stop"}`)); !st.Terminal {
		t.Fatalf("message_stop not terminal: %+v", st)
	}
	st = New().ObserveStream(wire.StreamState{}, "error", []byte(`{"type":"error","error":{"type":"overloaded_error"}}`))
	if !st.Terminal || !strings.Contains(st.UpstreamError, "overloaded_error") {
		t.Fatalf("%+v", st)
	}
}

func FuzzUsage(f *testing.F) {
	f.Add([]byte(`{"type":"message_start","message":{"usage":{"input_tokens":3}}}`))
	f.Add([]byte(`{"usage":{"input_tokens":-1,"output_tokens":1e3}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, ok := New().Usage(b)
		if !ok && u != (wire.Usage{}) {
			t.Fatalf("counts %+v without ok", u)
		}
		if len(b) == 0 {
			return
		}
		var st wire.StreamState
		st = New().ObserveStream(st, "message_delta", b)
		_ = New().ObserveStream(st, "", b)
	})
}
