package openai

import "github.com/clawdapus/clawgo/internal/jsontop"

// governed is what cllama reads or rewrites in a chat-completions request:
// routing (model, stream, stream_options), the conversation it restores
// and keys continuity on (messages: roles, content parts, tool calls and
// their results), the tools it adds beside the runner's (tools, the legacy
// functions, tool_choice, function_call), and the limits spend reads.
var governed = jsontop.NewShape(
	[]string{"model", "stream", "function_call", "max_tokens", "max_completion_tokens", "n", "parallel_tool_calls"},
	map[string]*jsontop.Shape{
		"stream_options": jsontop.NewShape([]string{"include_usage"}, nil),
		"messages": jsontop.NewShape([]string{"role", "tool_call_id", "name"}, map[string]*jsontop.Shape{
			"content":       jsontop.NewShape([]string{"type", "text"}, nil),
			"tool_calls":    jsontop.NewShape([]string{"id", "type"}, map[string]*jsontop.Shape{"function": toolFunction}),
			"function_call": toolFunction,
		}),
		"tools":       jsontop.NewShape([]string{"type"}, map[string]*jsontop.Shape{"function": toolFunction, "custom": toolFunction}),
		"functions":   toolFunction,
		"tool_choice": jsontop.NewShape([]string{"type"}, map[string]*jsontop.Shape{"function": toolFunction, "custom": toolFunction}),
	})

// toolFunction is a function (or custom tool) in a definition, a call or
// a choice: cllama reads its name and arguments.
var toolFunction = jsontop.NewShape([]string{"name", "arguments"}, nil)

// Governed implements wire.Format.
func (Format) Governed() *jsontop.Shape { return governed }
