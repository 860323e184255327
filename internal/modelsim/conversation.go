package modelsim

import (
	"strings"
)

// API formats.
const (
	FormatOpenAI    = "openai"
	FormatAnthropic = "anthropic"
	FormatResponses = "responses"
)

// Conversation is what rules look at: a request reduced to the facts the
// script format can match on, the same for every API.
type Conversation struct {
	Format string `json:"format"`
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	// IncludeUsage: OpenAI stream_options.include_usage.
	IncludeUsage bool `json:"include_usage,omitempty"`
	// System is the system prompt: OpenAI system and developer messages
	// (after the instructions, for Responses), or Anthropic's system
	// field, joined with blank lines.
	System string `json:"system,omitempty"`
	// LastUserText is the text of the most recent user message that has
	// text (Anthropic tool results travel in user messages; they do not
	// count).
	LastUserText string `json:"last_user_text,omitempty"`
	// ToolResults are the tool results in the last message, if any; for
	// Responses, the trailing run of function_call_output (and
	// custom_tool_call_output) items.
	ToolResults []ToolResult `json:"tool_results,omitempty"`
	// Tools are the names of the offered tools, in request order.
	Tools []string `json:"tools,omitempty"`
	// Messages counts the messages; for Responses, the input items,
	// previous turns included.
	Messages int `json:"messages"`
	// Responses API only: the previous_response_id and store the request
	// gave, and how many reasoning items its input carried, previous
	// turns included (and how many of them with encrypted_content), so
	// tests can see reasoning carried from round to round.
	PreviousResponseID      string `json:"previous_response_id,omitempty"`
	Store                   *bool  `json:"store,omitempty"`
	ReasoningItems          int    `json:"reasoning_items,omitempty"`
	EncryptedReasoningItems int    `json:"encrypted_reasoning_items,omitempty"`

	// resp is what a Responses answer needs beyond the conversation.
	resp *respTurn

	// allText is every piece of text in the request, for context_contains
	// and token estimates.
	allText []string
}

// ToolResult is one tool result in the last message.
type ToolResult struct {
	// ID is the tool call id it answers; Name the tool that call named,
	// when the call is in the transcript.
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// inputChars estimates the prompt size for usage numbers.
func (c *Conversation) inputChars() int {
	n := 0
	for _, t := range c.allText {
		n += len(t)
	}
	return n
}

func containsFold(haystack, needle string) bool {
	return strings.Contains(strings.ToLower(haystack), strings.ToLower(needle))
}

// canonicalTool reads a provider-safe alias back as a canonical name:
// "trading-api__get_market_context" -> "trading-api.get_market_context".
func canonicalTool(name string) string {
	return strings.ReplaceAll(name, "__", ".")
}

// lastSegment is a canonical name's tool part: "svc.tool" -> "tool".
func lastSegment(name string) string {
	c := canonicalTool(name)
	if i := strings.LastIndexByte(c, '.'); i >= 0 {
		return c[i+1:]
	}
	return c
}

// addresses reports whether a script's tool name refers to an offered (or
// called) tool name: exactly, by canonical name, or by bare tool name.
func addresses(script, offered string) bool {
	if script == offered || canonicalTool(script) == canonicalTool(offered) {
		return true
	}
	// A bare script name ("get_market_context") addresses a namespaced
	// tool; a namespaced script name never addresses a different service.
	return !strings.Contains(canonicalTool(script), ".") && lastSegment(offered) == script
}

// resolveTool returns the offered name a script's tool name addresses,
// preferring an exact match, or the script's name when none does.
func resolveTool(script string, offered []string) string {
	for _, o := range offered {
		if o == script {
			return o
		}
	}
	for _, o := range offered {
		if addresses(script, o) {
			return o
		}
	}
	return script
}
