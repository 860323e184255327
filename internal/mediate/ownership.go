package mediate

import (
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire"
)

// ownerKind is who answers a model response's tool calls (spec 000
// "mediated mode therefore partitions by response ownership"; the
// monotonic-executor model).
type ownerKind int

const (
	// nativeOnly: every call is the runner's; hand the response back.
	nativeOnly ownerKind = iota
	// managedPrefix: managed calls first, then possibly native ones. Run
	// the prefix, hide the native suffix, ask again.
	managedPrefix
	// rejected: a native call comes before a managed one. Execute nothing;
	// answer every call with tool_call_rejected and let the model replan.
	rejected
)

// ownership is who answers each call of one response.
type ownership struct {
	kind ownerKind
	// prefix is the number of leading proxy-owned calls (managedPrefix).
	prefix int
	// tools[i] is the managed tool of call i (nil for native or unknown).
	tools []*manifest.Tool
	// native[i] reports whether call i names a runner tool.
	native []bool
}

// ownership classifies calls. A name that is neither a runner tool nor a managed
// tool is owned by the proxy and answered unknown_tool (fail closed).
func (t *turn) ownership(calls []wire.Call) ownership {
	p := ownership{tools: make([]*manifest.Tool, len(calls)), native: make([]bool, len(calls))}
	for i, c := range calls {
		p.tools[i], p.native[i] = t.pres.owner(c.Name)
	}
	for p.prefix < len(calls) && !p.native[p.prefix] {
		p.prefix++
	}
	switch {
	case p.prefix == 0 && allTrue(p.native):
		p.kind = nativeOnly
	case p.prefix > 0 && allTrue(p.native[p.prefix:]):
		p.kind = managedPrefix
	default:
		p.kind = rejected
	}
	return p
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}
