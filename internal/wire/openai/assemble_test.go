package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
)

func TestAssemblerBoundsToolCallNames(t *testing.T) {
	a := New().NewAssembler()
	big := strings.Repeat("n", 1<<20)
	for i := 0; i < 12; i++ {
		ev := fmt.Sprintf(`{"id":"c","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}}]}`, i, big, big)
		a.Observe("", []byte(ev))
	}
	out, note := a.Result()
	if len(out) > wire.MaxAssembledBytes+64<<10 {
		t.Fatalf("assembled %d bytes, bound is %d", len(out), wire.MaxAssembledBytes)
	}
	if note == "" || !json.Valid(out) {
		t.Fatalf("note %q, valid %v", note, json.Valid(out))
	}
}
