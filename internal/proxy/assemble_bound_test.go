package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/exchange"
)

// A stream's history entry keeps at most maxAssembledBytes of content,
// whatever shape the content arrives in: whole content blocks (server tool
// results, documents) count as much as text deltas, or a provider stream
// could make the proxy hold gigabytes for one history line.
func TestAnthropicAssemblerBoundsWholeBlocks(t *testing.T) {
	a := newAssembler(exchange.Anthropic)
	a.observe("message_start", []byte(`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1}}}`))
	big := strings.Repeat("x", 1<<20)
	for i := 0; i < 12; i++ {
		ev := fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"web_search_tool_result","content":%q}}`, i, big)
		a.observe("content_block_start", []byte(ev))
		a.observe("content_block_stop", []byte(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)))
	}
	a.observe("message_stop", []byte(`{"type":"message_stop"}`))
	out, note := a.result()
	if len(out) > maxAssembledBytes+64<<10 {
		t.Fatalf("assembled %d bytes, bound is %d", len(out), maxAssembledBytes)
	}
	if note == "" {
		t.Fatal("no note that the entry was cut")
	}
	if !json.Valid(out) {
		t.Fatal("assembled response is not JSON")
	}
}

func TestOpenAIAssemblerBoundsToolCallNames(t *testing.T) {
	a := newAssembler(exchange.OpenAI)
	big := strings.Repeat("n", 1<<20)
	for i := 0; i < 12; i++ {
		ev := fmt.Sprintf(`{"id":"c","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}}]}`, i, big, big)
		a.observe("", []byte(ev))
	}
	out, note := a.result()
	if len(out) > maxAssembledBytes+64<<10 {
		t.Fatalf("assembled %d bytes, bound is %d", len(out), maxAssembledBytes)
	}
	if note == "" || !json.Valid(out) {
		t.Fatalf("note %q, valid %v", note, json.Valid(out))
	}
}
