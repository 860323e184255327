package usage

import "testing"

func TestFromJSON(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Usage
		ok   bool
	}{
		{"openai", `{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`, Usage{12, 3}, true},
		{"anthropic", `{"type":"message","usage":{"input_tokens":7,"output_tokens":4}}`, Usage{7, 4}, true},
		{"anthropic cache", `{"usage":{"input_tokens":7,"cache_creation_input_tokens":10,"cache_read_input_tokens":100,"output_tokens":4}}`, Usage{117, 4}, true},
		{"no usage", `{"choices":[]}`, Usage{}, false},
		{"null usage", `{"usage":null}`, Usage{}, false},
		{"usage in content only", `{"choices":[{"message":{"content":"\"usage\""}}]}`, Usage{}, false},
		{"not json", `"usage" oops`, Usage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, ok := FromJSON([]byte(tt.body))
			if u != tt.want || ok != tt.ok {
				t.Fatalf("got %+v %v, want %+v %v", u, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestStreamOpenAI(t *testing.T) {
	var s Stream
	for _, d := range []string{
		`{"choices":[{"delta":{"content":"hi"}}],"usage":null}`,
		`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}`,
		`[DONE]`,
	} {
		s.Observe([]byte(d))
	}
	if u, ok := s.Usage(); !ok || u != (Usage{9, 2}) {
		t.Fatalf("%+v %v", u, ok)
	}
}

func TestStreamAnthropic(t *testing.T) {
	var s Stream
	for _, d := range []string{
		`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":25,"cache_read_input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`,
	} {
		s.Observe([]byte(d))
	}
	if u, ok := s.Usage(); !ok || u != (Usage{30, 15}) {
		t.Fatalf("%+v %v", u, ok)
	}
}

func TestStreamNone(t *testing.T) {
	var s Stream
	s.Observe([]byte(`{"choices":[]}`))
	if _, ok := s.Usage(); ok {
		t.Fatal("usage reported without any")
	}
}

func FuzzUsage(f *testing.F) {
	f.Add([]byte(`{"usage":{"prompt_tokens":1,"completion_tokens":2}}`))
	f.Add([]byte(`{"type":"message_start","message":{"usage":{"input_tokens":3}}}`))
	f.Add([]byte(`{"usage":{"input_tokens":-1,"output_tokens":1e3}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, ok := FromJSON(b)
		if !ok && u != (Usage{}) {
			t.Fatalf("counts %+v without ok", u)
		}
		var s Stream
		s.Observe(b)
		s.Observe(b)
		_, _ = s.Usage()
	})
}
