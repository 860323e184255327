package usage

import (
	"strings"
	"testing"
)

func BenchmarkFromJSON1KB(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-b","object":"chat.completion","created":1,"model":"gpt-fake","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("lorem ipsum ", 80) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":250,"completion_tokens":200,"total_tokens":450}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := FromJSON(body); !ok {
			b.Fatal("no usage")
		}
	}
}
