package wire

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// Format is what cllama needs of every API format it speaks: enough to
// route a request, answer it with an error, and relay the provider's answer
// (passthrough). Implementations are stateless and safe for concurrent use;
// each method may be called from many requests at once.
type Format interface {
	// Name is the format's registry key, recorded in audit and history
	// ("openai", "anthropic").
	Name() string
	// Endpoint is where runners call the format and where it goes
	// upstream.
	Endpoint() Endpoint

	// Governed is the shape of the request members cllama reads or
	// rewrites, at the top level and in the objects it looks into
	// (messages, input items, tool calls, tool definitions): the edge
	// refuses a body where one of them is repeated or spelled in another
	// case (jsontop.Ambiguous), so no reader can take a member cllama did
	// not see.
	Governed() *jsontop.Shape

	// ErrorBody is the JSON body of an error cllama itself produces,
	// shaped so the format's official SDK reads it as an API error.
	ErrorBody(errType, msg string) []byte
	// ErrorEvent is the same error as an in-band event, for a stream
	// whose status line has already been sent.
	ErrorEvent(errType, msg string) Event

	// Usage reads token usage out of a non-streaming response body; ok
	// is false when it carries none (or is not JSON).
	Usage(body []byte) (u Usage, ok bool)
	// ObserveStream returns st updated with one event of an upstream
	// stream (name may be empty; data is non-empty): usage, the end of
	// the stream, and the provider's own error event. It reads as
	// little of data as it can: it runs on every relayed event.
	ObserveStream(st StreamState, name string, data []byte) StreamState
}

// Endpoint is a format's one POST endpoint.
type Endpoint struct {
	// Route is the path runners POST to ("/v1/chat/completions").
	Route string
	// Upstream is the path appended to a provider's base URL, which ends
	// in the API version ("/chat/completions").
	Upstream string
}

// StreamState is what the relay learns of an upstream stream, event by
// event, through Format.ObserveStream. The zero value is a stream nothing
// has been seen of.
type StreamState struct {
	// Terminal is set by the format's terminal event or by the provider's
	// own error event.
	Terminal bool
	// Stopped is set once a stop reason was seen: a provider that closes
	// without the terminal event has still finished.
	Stopped bool
	// UpstreamError holds (the start of) the data of the provider's own
	// in-band error event, relayed as is; the exchange is then not a
	// success.
	UpstreamError string
	// Usage is the usage seen so far; HaveUsage tells whether any event
	// carried usage.
	Usage     Usage
	HaveUsage bool
	// CreatedID is the id of the stored object the stream creates, as
	// announced by its first event (formats implementing Stored).
	CreatedID string
}

// Done reports whether the stream finished, rather than being cut short.
func (st StreamState) Done() bool { return st.Terminal || st.Stopped }

var errorPrefix = []byte(`{"error"`)

// ErrorEvent reports whether an event is a provider's in-band error, by the
// conventions the official SDKs read (an event named "error", or data that
// is an object whose first member is "error"), and returns st with it
// recorded. Formats call it first in ObserveStream.
func (st StreamState) ErrorEvent(name string, data []byte) (StreamState, bool) {
	if name != "error" && !bytes.HasPrefix(data, errorPrefix) {
		return st, false
	}
	st.Terminal = true
	st.UpstreamError = string(data[:min(len(data), 512)])
	return st, true
}

// FeedInjector is a format whose requests can carry context feeds
// (optional ability; spec 003, internal/feeds).
type FeedInjector interface {
	// InjectFeeds returns a new body with text added to the request's
	// system context, the runner's own prompt kept first and byte for
	// byte. body is a valid JSON object (the caller checked) and is not
	// modified. ok is false when body is not of the format's shape; the
	// caller then sends it as it is.
	InjectFeeds(body []byte, text string) (out []byte, ok bool)
}

// StreamAssembling is a format whose streams can be rebuilt into the
// non-streaming response they stand for (optional ability; session
// history).
type StreamAssembling interface {
	// NewAssembler returns an Assembler for one stream.
	NewAssembler() Assembler
}

// Assembler rebuilds one stream's non-streaming equivalent, one event at a
// time. It is not safe for concurrent use.
type Assembler interface {
	// Observe takes one event (data non-empty).
	Observe(name string, data []byte)
	// Result returns the assembled response and a note when it is
	// incomplete.
	Result() (json.RawMessage, string)
}

// MarshalUnescaped is json.Marshal without HTML escaping, for text a
// person reads (error messages quote "<provider>/<model>"), and without
// the trailing newline of an Encoder.
func MarshalUnescaped(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// NativeProvider is a format that belongs to one provider (optional
// ability): a model named without a "<provider>/" prefix on its endpoint
// goes to the provider of that name when the pod configures it, as the
// format's own SDKs send bare names ("claude-sonnet-4-5" on /v1/messages).
// A format without it sends bare names to the pod's default provider.
type NativeProvider interface {
	// NativeProvider is the provider's name ("anthropic").
	NativeProvider() string
}

// HeaderForwarding is a format whose clients send protocol headers the
// provider needs (optional ability; Anthropic's anthropic-version and
// anthropic-beta). The proxy forwards a runner's request headers by an
// allowlist; these join it. They must be protocol, never identity or
// credentials.
type HeaderForwarding interface {
	// ForwardedHeaders are the header names, in any case.
	ForwardedHeaders() []string
}

// TokenCounter is a format whose API counts a request's input tokens
// without generating (optional ability; Anthropic's POST
// /v1/messages/count_tokens). The request body has the shape of the
// format's generation request, so feeds and managed tools are added to it
// as to a generation, and the count is of what cllama would send.
type TokenCounter interface {
	// CountTokens is the counting endpoint: its route on cllama and its
	// path below the provider's base URL.
	CountTokens() Endpoint
}

// ModelCatalog is a format whose clients list models (optional ability;
// GET /v1/models and /v1/models/{id}). Those routes carry no body, so the
// format is chosen by the request's headers: the first format that claims
// them, else the registry's fallback.
type ModelCatalog interface {
	Format
	// ClaimsModelRequest reports whether a request with these headers
	// comes from the format's own clients (an Anthropic SDK sends
	// anthropic-version and x-api-key).
	ClaimsModelRequest(h http.Header) bool
	// ModelList is the body listing models, in order.
	ModelList(models []Model) []byte
	// ModelObject is the body describing one model.
	ModelObject(m Model) []byte
}

// Model is one model a runner may use.
type Model struct {
	// ID is the name the runner sends as "model".
	ID string
	// Provider is the provider serving it.
	Provider string
}

var usageKey = []byte(`"usage"`)

// UsageMember reads the top-level "usage" member of a response body with
// read, the format's reader of its usage object; the body is scanned, not
// decoded (package jsontop).
func UsageMember(body []byte, read func(raw []byte, u *Usage) bool) (Usage, bool) {
	var u Usage
	if jsontop.IndexKey(body, usageKey) < 0 {
		return u, false
	}
	raw, _ := jsontop.Find(body, "usage")
	if !read(raw, &u) {
		return Usage{}, false
	}
	return u, true
}

// Stored is a format whose provider keeps what it generates, for the
// runner to read back or continue from (optional ability; the Responses
// API's GET and DELETE /v1/responses/{id}). cllama relays those routes
// only for the agent that created the object, at the provider that
// created it, and refuses a request continuing from another agent's.
type Stored interface {
	Format
	// ObjectRoutes are the routes that act on one stored object.
	ObjectRoutes() []ObjectRoute
	// CreatedID is the id of the object a successful non-streaming
	// response created ("" when none). A stream announces it through
	// StreamState.CreatedID.
	CreatedID(body []byte) string
	// Continues is the id of the stored object a generation request
	// continues from ("" when none; Responses previous_response_id).
	Continues(body []byte) string
	// ContinuesMember is the request member Continues reads, as messages
	// name it ("previous_response_id").
	ContinuesMember() string
}

// ObjectRoute is one route on a stored object. Route and Upstream hold the
// placeholder {id}; Upstream is below the provider's base URL.
type ObjectRoute struct {
	Method   string // GET, DELETE or POST
	Route    string // "/v1/responses/{id}"
	Upstream string // "/responses/{id}"
}
