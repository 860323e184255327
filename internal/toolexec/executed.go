package toolexec

import (
	"bytes"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire"
)

// DeclaresClawID reports whether a tool's input schema names claw_id among
// its top-level properties: the argument is then always sent, forced to
// the calling agent's id (spec 000 "Path placeholders"). The answer is
// remembered per schema.
func DeclaresClawID(schema json.RawMessage) bool {
	if len(schema) == 0 {
		return false
	}
	if v, ok := declared.Load(string(schema)); ok {
		return v.(bool)
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	_, d := s.Properties[clawIDParam]
	if declaredCount.Add(1) > maxDeclared {
		declared.Clear()
		declaredCount.Store(1)
	}
	declared.Store(string(schema), d)
	return d
}

// maxDeclared bounds DeclaresClawID's memory: schemas come from compiled
// manifests, a few per tool.
const maxDeclared = 4096

var (
	declared      sync.Map // schema -> bool
	declaredCount atomic.Int64
)

// ExecutedArguments is args (a JSON object) as the service receives them
// as far as an operator and duplicate detection care: every other
// spelling of claw_id (SpellsClawID) dropped, and claw_id set to the
// agent's id when the model supplied it or tool's schema declares it —
// the rule Run applies (forceClawID), in one place. args that are not an
// object are returned as they are.
func ExecutedArguments(args json.RawMessage, agentID string, tool *manifest.Tool) json.RawMessage {
	declares := tool != nil && DeclaresClawID(tool.InputSchema)
	if !declares && !containsFold(args, "claw") && !bytes.Contains(args, []byte(`\u`)) {
		return args // cannot hold a claw_id key, escaped or not
	}
	obj, err := wire.DecodeObject(args)
	if err != nil {
		return args
	}
	changed := false
	for k := range obj {
		if k != clawIDParam && SpellsClawID(k) {
			delete(obj, k)
			changed = true
		}
	}
	if _, ok := obj[clawIDParam]; ok || declares {
		obj[clawIDParam] = wire.Quote(agentID)
		changed = true
	}
	if !changed {
		return args
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return args
	}
	return b
}

// containsFold reports whether b contains the ASCII word w in any case.
func containsFold(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(w)], []byte(w)) {
			return true
		}
	}
	return false
}
