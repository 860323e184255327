package responses

import "github.com/clawdapus/clawgo/internal/jsontop"

// governed is what cllama reads or rewrites in a Responses request:
// routing (model, stream), the stored conversation it checks ownership
// of (previous_response_id, conversation), the instructions feeds are
// added to, the input items it restores and keys continuity on (type,
// role, content, calls and their outputs), the tools it adds beside the
// runner's (tools, tool_choice), and the limits spend reads.
var governed = jsontop.NewShape(
	[]string{"model", "stream", "previous_response_id", "instructions", "store", "max_output_tokens"},
	map[string]*jsontop.Shape{
		"conversation": jsontop.NewShape([]string{"id"}, nil),
		"input": jsontop.NewShape([]string{"type", "role", "id", "call_id", "name", "arguments", "input", "output"},
			map[string]*jsontop.Shape{"content": jsontop.NewShape([]string{"type", "text"}, nil)}),
		"tools":       jsontop.NewShape([]string{"type", "name"}, nil),
		"tool_choice": jsontop.NewShape([]string{"type", "name"}, nil),
	})

// Governed implements wire.Format.
func (Format) Governed() *jsontop.Shape { return governed }
