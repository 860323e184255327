package modelsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"

	"gopkg.in/yaml.v3"
)

// Script is an ordered list of rules. The first rule whose match holds
// answers the request; when none does, the default rule (if any) answers.
type Script struct {
	Rules []Rule `yaml:"rules" json:"rules"`

	dflt *Rule
}

// Rule is one scripted answer and when to give it.
type Rule struct {
	// Name identifies the rule in logs, errors and recorded requests.
	Name string `yaml:"name" json:"name"`
	// Default marks the fallback rule, used only when no other rule
	// matches, wherever it appears. At most one rule may be the default.
	Default bool  `yaml:"default" json:"default"`
	Match   Match `yaml:"match" json:"match"`
	Reply   Reply `yaml:"reply" json:"reply"`
}

// Match lists conditions that must all hold; an empty Match matches every
// request. Text comparisons are case-insensitive substrings unless noted.
type Match struct {
	// UserContains: the last user message's text contains this.
	UserContains string `yaml:"user_contains" json:"user_contains,omitempty"`
	// UserRegex: the last user message's text matches this RE2 expression
	// (case-sensitive unless it starts with (?i)).
	UserRegex string `yaml:"user_regex" json:"user_regex,omitempty"`
	// ToolResult: whether the last message carries tool results.
	ToolResult *bool `yaml:"tool_result" json:"tool_result,omitempty"`
	// ToolResultOf: the last message carries a result of this tool
	// (addressed like tool calls, see ToolCall.Name). Implies ToolResult.
	ToolResultOf string `yaml:"tool_result_of" json:"tool_result_of,omitempty"`
	// ToolResultContains: a tool result in the last message contains this.
	ToolResultContains string `yaml:"tool_result_contains" json:"tool_result_contains,omitempty"`
	// ToolsOffered: every one of these tools is offered by the request.
	ToolsOffered []string `yaml:"tools_offered" json:"tools_offered,omitempty"`
	// ToolsNotOffered: none of these tools is offered.
	ToolsNotOffered []string `yaml:"tools_not_offered" json:"tools_not_offered,omitempty"`
	// Model: the request's model equals this, or its part after the last
	// "/" does (so "gpt-4o" matches "openai/gpt-4o").
	Model string `yaml:"model" json:"model,omitempty"`
	// SystemContains: the system prompt (OpenAI system and developer
	// messages, Responses instructions too, Anthropic system) contains
	// this.
	SystemContains string `yaml:"system_contains" json:"system_contains,omitempty"`
	// ContextContains: any text anywhere in the request (system, every
	// message, tool results) contains this.
	ContextContains string `yaml:"context_contains" json:"context_contains,omitempty"`
	// Format: which API the request used: "openai" (chat completions),
	// "anthropic" (messages) or "responses" (the OpenAI Responses API).
	Format string `yaml:"format" json:"format,omitempty"`

	userRe *regexp.Regexp
}

// Reply is what a rule answers: text, tool calls, or both; or an HTTP error.
type Reply struct {
	Text      string     `yaml:"text" json:"text,omitempty"`
	ToolCalls []ToolCall `yaml:"tool_calls" json:"tool_calls,omitempty"`
	// Usage overrides the token counts, which are otherwise estimated
	// (about four characters a token).
	Usage *Usage `yaml:"usage" json:"usage,omitempty"`
	// Error answers with an HTTP error in the API's error shape instead.
	Error *ErrorReply `yaml:"error" json:"error,omitempty"`
	// DelayMs waits this long before answering (streams: before the first
	// event), to exercise timeouts and keepalives.
	DelayMs int `yaml:"delay_ms" json:"delay_ms,omitempty"`
}

// ToolCall is a scripted tool call.
type ToolCall struct {
	// Name addresses an offered tool: by its exact name, by its canonical
	// name with "__" read as "." (so "trading-api.get_market_context"
	// addresses an offered "trading-api__get_market_context"), or by its
	// last segment ("get_market_context"). The reply carries the offered
	// name; a name that addresses no offered tool is sent as written.
	Name string `yaml:"name" json:"name"`
	// Arguments is a JSON object (written as YAML or JSON).
	Arguments any `yaml:"arguments" json:"arguments,omitempty"`

	args json.RawMessage
}

// Usage is a reply's token accounting.
type Usage struct {
	InputTokens  int `yaml:"input_tokens" json:"input_tokens"`
	OutputTokens int `yaml:"output_tokens" json:"output_tokens"`
}

// ErrorReply is a scripted API error.
type ErrorReply struct {
	Status  int    `yaml:"status" json:"status"`
	Type    string `yaml:"type" json:"type,omitempty"`
	Message string `yaml:"message" json:"message"`
}

// maxScriptBytes bounds a script file; scripts are hand-written.
const maxScriptBytes = 8 << 20

// LoadScript reads and validates a script file (YAML or JSON).
func LoadScript(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScriptBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxScriptBytes {
		return nil, fmt.Errorf("%s: script larger than %d bytes", path, maxScriptBytes)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseScript parses and validates a script. JSON is accepted because it is
// YAML; unknown fields are errors so that typos do not silently widen a
// rule.
func ParseScript(data []byte) (*Script, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Script
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty script: want a mapping with a rules list")
		}
		return nil, fmt.Errorf("parse script: %w", err)
	}
	if err := s.compile(); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Script) compile() error {
	if len(s.Rules) == 0 {
		return errors.New("script has no rules")
	}
	for i := range s.Rules {
		r := &s.Rules[i]
		if r.Name == "" {
			r.Name = fmt.Sprintf("rule %d", i+1)
		}
		if err := r.compile(); err != nil {
			return fmt.Errorf("rule %q: %w", r.Name, err)
		}
		if r.Default {
			if s.dflt != nil {
				return fmt.Errorf("rules %q and %q are both default", s.dflt.Name, r.Name)
			}
			s.dflt = r
		}
	}
	return nil
}

func (r *Rule) compile() error {
	m := &r.Match
	if m.UserRegex != "" {
		re, err := regexp.Compile(m.UserRegex)
		if err != nil {
			return fmt.Errorf("user_regex: %w", err)
		}
		m.userRe = re
	}
	switch m.Format {
	case "", FormatOpenAI, FormatAnthropic, FormatResponses:
	default:
		return fmt.Errorf("format %q: want %q, %q or %q", m.Format, FormatOpenAI, FormatAnthropic, FormatResponses)
	}
	rep := &r.Reply
	if rep.Error != nil {
		if rep.Error.Status < 400 || rep.Error.Status > 599 {
			return fmt.Errorf("error.status %d: want 400-599", rep.Error.Status)
		}
		if rep.Text != "" || len(rep.ToolCalls) > 0 {
			return errors.New("a reply is either an error or text/tool calls, not both")
		}
		return nil
	}
	if rep.Text == "" && len(rep.ToolCalls) == 0 {
		return errors.New("reply needs text, tool_calls or error")
	}
	if rep.DelayMs < 0 || rep.DelayMs > 600_000 {
		return fmt.Errorf("delay_ms %d: want 0-600000", rep.DelayMs)
	}
	for i := range rep.ToolCalls {
		tc := &rep.ToolCalls[i]
		if tc.Name == "" {
			return fmt.Errorf("tool_calls[%d]: name is required", i)
		}
		args, err := argumentsJSON(tc.Arguments)
		if err != nil {
			return fmt.Errorf("tool_calls[%d] (%s): %w", i, tc.Name, err)
		}
		tc.args = args
	}
	return nil
}

// argumentsJSON renders scripted arguments as a JSON object. A string is
// taken as JSON text, so scripts can paste arguments verbatim.
func argumentsJSON(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	var b []byte
	if s, ok := v.(string); ok {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(s)); err != nil {
			return nil, errors.New("arguments must be a JSON object")
		}
		b = buf.Bytes()
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("arguments are not JSON-compatible: %w", err)
		}
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return nil, errors.New("arguments must be a JSON object")
	}
	return json.RawMessage(b), nil
}
