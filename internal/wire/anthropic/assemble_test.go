package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

// A stream's history entry keeps at most wire.MaxAssembledBytes of content,
// whatever shape the content arrives in: whole content blocks (server tool
// results, documents) count as much as text deltas, or a provider stream
// could make the proxy hold gigabytes for one history line.
func TestAssemblerBoundsWholeBlocks(t *testing.T) {
	a := New().NewAssembler()
	a.Observe("message_start", []byte(`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1}}}`))
	big := strings.Repeat("x", 1<<20)
	for i := 0; i < 12; i++ {
		ev := fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"web_search_tool_result","content":%q}}`, i, big)
		a.Observe("content_block_start", []byte(ev))
		a.Observe("content_block_stop", []byte(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)))
	}
	a.Observe("message_stop", []byte(`{"type":"message_stop"}`))
	out, note := a.Result()
	if len(out) > wire.MaxAssembledBytes+64<<10 {
		t.Fatalf("assembled %d bytes, bound is %d", len(out), wire.MaxAssembledBytes)
	}
	if note == "" {
		t.Fatal("no note that the entry was cut")
	}
	if !json.Valid(out) {
		t.Fatal("assembled response is not JSON")
	}
}
