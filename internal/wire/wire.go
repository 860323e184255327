// Package wire is the seam between cllama and the API formats it speaks
// ("One loop, every format", ARCHITECTURE.md). Everything that differs
// between formats sits behind its interfaces, implemented once per format
// in wire/<format> and found through the one registry, wire/formats:
//
//   - Format, the core every format implements: its name and endpoint,
//     its error body and in-stream error event, token usage, and the end
//     of an upstream stream (what the passthrough relay needs);
//   - optional abilities, each a small interface of its own: FeedInjector
//     (where context feeds go), StreamAssembling (a stream's
//     non-streaming equivalent, for history), ToolLoop (how a request
//     lists messages and tools, how a response carries text and tool
//     calls, how a tool round is appended, how a message is canonicalised
//     for continuity, how a final answer is written) and LiveStreaming
//     (how a mediated turn's rounds stream to the runner as one response
//     lifecycle, their text sent on as it comes). A stage that needs
//     an ability a format lacks refuses the request in that format's
//     error shape; it never substitutes another format.
//
// Every mediation rule lives in internal/mediate and uses only ToolLoop
// (and LiveStreaming, where a format has it).
// No package outside wire/<format> decides anything by a format's name.
//
// Bodies keep every field the proxy does not interpret byte for byte: the
// top level of a request is a map of raw values and messages stay raw until
// a rule needs to look inside one.
package wire

import (
	"encoding/json"
	"errors"
	"sort"
)

// ToolLoop is what the managed-tool loop needs of a format (optional
// ability). Implementations are stateless and safe for concurrent use.
type ToolLoop interface {
	Format

	// ParseCheckedRequest decodes a runner request already validated
	// (jsontop.Valid, as the edge does once: exchange.Checked) without
	// validating it again; ParseRequest is the same for a body not yet
	// checked. OpenAI legacy functions[] and function_call are normalised
	// into tools[] and tool_choice.
	ParseCheckedRequest(body []byte) (*Request, error)
	// ToolDefinition renders one managed tool as the format declares tools.
	ToolDefinition(name, description string, schema json.RawMessage) (json.RawMessage, error)
	// RewriteToolChoice renames the tool a tool_choice names, when rename
	// returns ok; other tool_choice values are left untouched.
	RewriteToolChoice(r *Request, rename func(name string) (string, bool)) error
	// PrepareUpstream makes the request non-streaming for the upstream call
	// (spec 000: stream:false when managed tools are injected).
	PrepareUpstream(r *Request)

	// ParseResponse decodes a non-streaming upstream response.
	ParseResponse(body []byte) (*Response, error)
	// AssistantTurn is what resp adds to the conversation, carrying only
	// the tool calls whose indexes are in keep (all of them when keep is
	// nil): one assistant message in formats where a message holds its
	// tool calls, or the response's output items in order (reasoning,
	// text, calls) where each is an item of its own.
	AssistantTurn(resp *Response, keep []int) ([]json.RawMessage, error)
	// ResultTurn renders tool results as the message(s) that follow an
	// assistant turn.
	ResultTurn(results []Result) ([]json.RawMessage, error)

	// Canonical reduces a conversation message to what identifies it for
	// continuity, so that a runner re-serialising it (content string vs
	// parts, null vs "", cache markers, key order) yields the same bytes.
	// System messages (RoleSystem) take no part in the key (feeds rewrite
	// them every turn; spec 003), nor do items that belong to the answer
	// after them (RolePrelude).
	Canonical(msg json.RawMessage) (Canon, error)

	// FinalBody renders resp as the runner's non-streaming response, with
	// usage replaced by the sum over all rounds.
	FinalBody(resp *Response, total Usage) ([]byte, error)
	// StreamEvents renders resp as the format's SSE stream.
	StreamEvents(resp *Response, total Usage, includeUsage bool) ([]Event, error)
	// RelaxToolChoice turns a tool_choice that forces a tool call (a named
	// tool, "required", "any") into "auto", so that after a hidden round
	// the model can answer instead of calling the same tool until the
	// round budget runs out.
	RelaxToolChoice(r *Request)
}

// Request is a parsed runner request. Fields holds every top-level member
// except messages and tools, verbatim.
type Request struct {
	Fields map[string]json.RawMessage
	// Messages is the conversation, in the member MessagesKey names
	// ("messages" when empty; Responses: "input").
	Messages    []json.RawMessage
	MessagesKey string
	// ProviderHolds is set when the provider keeps the conversation
	// itself (Responses previous_response_id): the request carries only
	// what is new, and hidden rounds need no continuity entry.
	ProviderHolds bool
	// Tools are the tool definitions in order: the runner's own first.
	Tools []json.RawMessage
	// ToolNames are the names of the runner's own tools.
	ToolNames []string
	// Stream and IncludeUsage are what the runner asked for.
	Stream       bool
	IncludeUsage bool
}

// Encode renders the request as JSON. Members and messages are raw JSON
// already (decoded by a parser or built by json.Marshal), so they are
// copied as they are instead of being re-validated by encoding/json: on a
// long transcript that is most of the proxy's own cost per round.
func (r *Request) Encode() ([]byte, error) {
	parts, err := r.encode(false)
	if err != nil {
		return nil, err
	}
	return parts[0], nil
}

// EncodeParts is Encode as the slices that make the document, sent one
// after the other: members and messages of largeItem bytes or more are
// the request's own slices, not copies, so a round of a turn whose
// transcript holds a large document does not copy it again.
func (r *Request) EncodeParts() ([][]byte, error) { return r.encode(true) }

// largeItem is the size from which EncodeParts refers to an item rather
// than copying it.
const largeItem = 16 << 10

func (r *Request) encode(refer bool) ([][]byte, error) {
	list := r.MessagesKey
	if list == "" {
		list = "messages"
	}
	keys := make([]string, 0, len(r.Fields))
	size := 64
	add := func(n int) {
		if !refer || n < largeItem {
			size += n
		}
	}
	for k, v := range r.Fields {
		if k == list || k == "tools" {
			continue
		}
		keys = append(keys, k)
		size += len(k) + 4
		add(len(v))
	}
	sort.Strings(keys)
	for _, m := range r.Messages {
		size++
		add(len(m))
	}
	for _, t := range r.Tools {
		size++
		add(len(t))
	}
	e := encoder{b: make([]byte, 0, size), refer: refer}
	e.b = append(e.b, '{')
	for _, k := range keys {
		v := r.Fields[k]
		if len(v) == 0 {
			continue
		}
		kq, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		e.b = append(append(e.b, kq...), ':')
		e.item(v)
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, list...) // a format's constant: needs no escaping
	e.b = append(e.b, `":`...)
	e.array(r.Messages)
	if len(r.Tools) > 0 {
		e.b = append(e.b, `,"tools":`...)
		e.array(r.Tools)
	}
	e.b = append(e.b, '}')
	return append(e.parts, e.b), nil
}

// encoder builds a document in b, or with refer as parts: what was built
// so far, then each large item as it is.
type encoder struct {
	parts [][]byte
	b     []byte
	refer bool
}

func (e *encoder) item(it []byte) {
	if !e.refer || len(it) < largeItem {
		e.b = append(e.b, it...)
		return
	}
	// The glue built so far is a part of its own; later glue goes in the
	// rest of the same buffer (never over what the part holds).
	e.parts = append(e.parts, e.b, it)
	e.b = e.b[len(e.b):]
}

func (e *encoder) array(items []json.RawMessage) {
	e.b = append(e.b, '[')
	for i, it := range items {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		if len(it) == 0 {
			it = json.RawMessage("null")
		}
		e.item(it)
	}
	e.b = append(e.b, ']')
}

// One wraps a single marshalled message as a message list, for
// AssistantTurn implementations whose turn is one message.
func One(msg []byte, err error) ([]json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	return []json.RawMessage{msg}, nil
}

// Call is one tool call of a model response.
type Call struct {
	ID string
	// Name is the name the model used (a presented alias for managed tools).
	Name string
	// Arguments is the arguments as the model sent them: a JSON object, or
	// for OpenAI possibly malformed text.
	Arguments json.RawMessage
}

// Usage is token usage of one or more model calls.
type Usage struct {
	Input  int
	Output int
	// CacheCreation and CacheRead are Anthropic's cached prompt tokens,
	// which it reports apart from input_tokens (OpenAI's prompt_tokens
	// already include cached ones; there both stay 0).
	CacheCreation int
	CacheRead     int
	// CachedInput and Reasoning are OpenAI's usage details
	// (prompt_tokens_details.cached_tokens,
	// completion_tokens_details.reasoning_tokens), already counted in
	// Input and Output.
	CachedInput int
	Reasoning   int
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.Input + v.Input, u.Output + v.Output, u.CacheCreation + v.CacheCreation, u.CacheRead + v.CacheRead,
		u.CachedInput + v.CachedInput, u.Reasoning + v.Reasoning}
}

// Prompt is every prompt token billed, cached ones included: what audit
// tokens_in and history prompt_tokens count in both formats.
func (u Usage) Prompt() int { return u.Input + u.CacheCreation + u.CacheRead }

// Response is a decoded non-streaming model response.
type Response struct {
	ID    string
	Model string
	// Text is all text content, concatenated.
	Text  string
	Calls []Call
	// Stop is finish_reason (OpenAI) or stop_reason (Anthropic).
	Stop  string
	Usage Usage
	// Raw is the response body as received; the format keeps its own
	// decoded view in private fields.
	Raw  []byte
	Priv any
}

// Result is one tool result to append.
type Result struct {
	CallID string
	// Content is the result envelope as JSON text.
	Content []byte
	IsError bool
}

// Role is a message's role as far as continuity cares.
type Role int

// Roles.
const (
	RoleOther Role = iota
	RoleSystem
	RoleUser
	RoleAssistant
	RoleTool
	// RolePrelude is an item that leads into the assistant item after it
	// and belongs with it (a reasoning item before the message or call it
	// produced). It takes no part in the continuity key, since runners
	// may drop it, and hidden rounds restored before an assistant item go
	// before the prelude items that lead into it.
	RolePrelude
)

// Canon is a message's canonical identity.
type Canon struct {
	Role  Role
	Bytes []byte
	// Calls are the names of the tool calls the message makes, as
	// written (an assistant turn; none for other messages).
	Calls []string
}

// Event is one SSE event: an optional event name and its data.
type Event struct {
	Name string
	Data []byte
}

// ErrMalformed wraps every parse error of a body.
var ErrMalformed = errors.New("malformed body")
