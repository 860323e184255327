// Command mcp-runner is a tiny reference agent for native tools: an MCP
// client that runs the pod tools it is granted itself instead of leaving
// them to cllama. At start it reads its MCP servers from the file named by
// CLAW_MCP_CONFIG (default /claw/mcp.json, the mcpServers shape), or from
// CLAW_MCP_URL with CLAW_MCP_TOKEN as bearer when that file does not
// exist, connects to each over Streamable HTTP and lists their tools.
//
// It then plays a short scripted conversation through the OpenAI chat
// completions API (OPENAI_BASE_URL and OPENAI_API_KEY point it at cllama),
// offering the model its own tool save_note plus every MCP tool under a
// name the API accepts (see modelName). A call of an MCP tool goes to its
// server with tools/call; save_note runs in the runner. The transcript
// marks each call "[mcp]" or "[runner-native]".
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/examples/trading-desk/runners/convo"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

var defaultTurns = []convo.Turn{
	{User: "What does my portfolio look like right now?", Stream: true},
	{User: "Save a note with that summary.", Stream: false},
}

func main() { convo.Main("mcp-runner", defaultTurns, run) }

func run(ctx context.Context, cfg convo.Config, t *convo.Transcript) error {
	servers, err := loadServers(os.Getenv)
	if err != nil {
		return err
	}
	tb, err := openToolbox(ctx, servers, connectWait, convo.NoteToolName)
	if err != nil {
		return err
	}
	defer tb.Close()
	for _, s := range servers {
		t.Line("mcp", fmt.Sprintf("connected to %s at %s", s.Name, s.URL))
	}
	for _, mt := range tb.tools {
		t.Line("mcp", fmt.Sprintf("tool %s from %s, offered to the model as %s", mt.Canonical(), mt.Server, mt.ModelName))
	}
	if len(tb.tools) == 0 {
		t.Line("mcp", "the MCP servers list no tools")
	}
	return converse(ctx, cfg, t, tb)
}

// converse plays the turns with the model, running the tools it calls.
func converse(ctx context.Context, cfg convo.Config, t *convo.Transcript, tb *toolbox) error {
	client := openai.NewClient() // reads OPENAI_BASE_URL and OPENAI_API_KEY
	notes := &convo.Notes{}
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        convo.NoteToolName,
		Description: openai.String(convo.NoteToolDescription),
		Parameters:  shared.FunctionParameters{"type": "object", "properties": convo.NoteToolProperties, "required": []string{"text"}},
	})}
	for _, mt := range tb.tools {
		tools = append(tools, openai.ChatCompletionFunctionTool(functionDefinition(mt)))
	}
	var history []openai.ChatCompletionMessageParamUnion
	for _, turn := range cfg.Turns {
		t.Line("user", turn.User)
		history = append(history, openai.UserMessage(turn.User))
		result := convo.TurnResult{User: turn.User, Stream: turn.Stream}
		for step := 0; ; step++ {
			if step == cfg.MaxSteps {
				return fmt.Errorf("turn %q: no answer after %d steps", turn.User, step)
			}
			params := openai.ChatCompletionNewParams{Model: cfg.Model, Messages: history, Tools: tools}
			msg, err := convo.Retry(ctx, 30*time.Second, func() (openai.ChatCompletionMessage, error) {
				return complete(ctx, &client, params, turn.Stream)
			})
			if err != nil {
				return fmt.Errorf("turn %q: %w", turn.User, err)
			}
			history = append(history, msg.ToParam())
			if len(msg.ToolCalls) == 0 {
				result.Answer = msg.Content
				t.Line("assistant", msg.Content)
				break
			}
			for _, call := range msg.ToolCalls {
				name, args := call.Function.Name, call.Function.Arguments
				var out string
				switch mt, ok := tb.find(name); {
				case ok:
					out, _ = mt.call(ctx, args)
					t.Line("tool", fmt.Sprintf("%s(%s) -> %s [mcp]", mt.Canonical(), args, clip(out, 400)))
					result.MCPCalls = append(result.MCPCalls, mt.Canonical())
				case name == convo.NoteToolName:
					out, _ = notes.Run(name, []byte(args))
					t.Line("tool", fmt.Sprintf("%s(%s) -> %s [runner-native]", name, args, out))
					result.NativeCalls = append(result.NativeCalls, name)
				default:
					out = fmt.Sprintf("error: unknown tool %q", name)
					t.Line("tool", fmt.Sprintf("%s(%s) -> %s [unknown]", name, args, out))
				}
				history = append(history, openai.ToolMessage(out, call.ID))
			}
		}
		t.Turns = append(t.Turns, result)
	}
	return nil
}

// functionDefinition presents an MCP tool to the model: its model name,
// its description and its input schema as the parameters.
func functionDefinition(mt *mcpTool) shared.FunctionDefinitionParam {
	params, ok := mt.Tool.InputSchema.(map[string]any)
	if !ok || params == nil {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	desc := mt.Tool.Description
	if desc == "" {
		desc = mt.Tool.Title
	}
	fd := shared.FunctionDefinitionParam{Name: mt.ModelName, Parameters: shared.FunctionParameters(params)}
	if desc != "" {
		fd.Description = openai.String(desc)
	}
	return fd
}

// complete makes one model call, streaming or not, and returns the message.
func complete(ctx context.Context, client *openai.Client, params openai.ChatCompletionNewParams, stream bool) (openai.ChatCompletionMessage, error) {
	if !stream {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return openai.ChatCompletionMessage{}, err
		}
		if len(resp.Choices) == 0 {
			return openai.ChatCompletionMessage{}, fmt.Errorf("response has no choices")
		}
		return resp.Choices[0].Message, nil
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := client.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	if len(acc.Choices) == 0 {
		return openai.ChatCompletionMessage{}, fmt.Errorf("stream carried no choices")
	}
	return acc.Choices[0].Message, nil
}

// clip shortens text for a transcript line; the model gets all of it.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
