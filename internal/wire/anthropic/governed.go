package anthropic

import "github.com/clawdapus/clawgo/internal/jsontop"

// governed is what cllama reads or rewrites in a Messages request:
// routing (model, stream), the system prompt feeds are added to, the
// conversation it restores and keys continuity on (roles and content
// blocks: text, tool_use, tool_result), the tools it adds beside the
// runner's (tools, tool_choice), and the limits spend reads.
var governed = jsontop.NewShape(
	[]string{"model", "stream", "max_tokens"},
	map[string]*jsontop.Shape{
		"system": textBlock,
		"messages": jsontop.NewShape([]string{"role"}, map[string]*jsontop.Shape{
			"content": jsontop.NewShape([]string{"type", "text", "id", "name", "input", "tool_use_id", "is_error"},
				map[string]*jsontop.Shape{"content": textBlock}),
		}),
		"tools":       jsontop.NewShape([]string{"name", "type"}, nil),
		"tool_choice": jsontop.NewShape([]string{"type", "name"}, nil),
	})

var textBlock = jsontop.NewShape([]string{"type", "text"}, nil)

// Governed implements wire.Format.
func (Format) Governed() *jsontop.Shape { return governed }
