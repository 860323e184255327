package mediate

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/wire"
)

// The scenario tests speak a neutral vocabulary; a kit translates it into
// one wire format and back, so one table runs against both formats.

type tcall struct{ ID, Name, Args string }

type tresult struct {
	ID  string
	Raw string
	Env toolexec.Envelope
}

// tmsg is a conversation message: user text, an assistant turn, or the
// tool results that follow one.
type tmsg struct {
	Role    string // "user", "assistant", "tool"
	Text    string
	Calls   []tcall
	Results []tresult
	// Alt serialises the message in an equivalent alternate form (content
	// parts instead of a string and back), as some runners do.
	Alt bool
}

// step is one scripted upstream answer.
type step struct {
	Text   string
	Calls  []tcall
	Usage  wire.Usage
	Status int    // non-2xx: Raw is the body
	Raw    string // verbatim body
	Hold   bool   // wait until the request is canceled
	// RetryAfter is the Retry-After header of a non-2xx step.
	RetryAfter string
	// Dyn, when set, makes the step from the request it answers (a call
	// naming what an earlier result said).
	Dyn func(req upReq) step
}

// upReq is what the upstream received.
type upReq struct {
	Tools      []string
	ToolChoice string
	Stream     bool
	StreamOpts bool
	Msgs       []tmsg
	Raw        []byte
}

// final is what the runner received.
type final struct {
	Text  string
	Calls []tcall
	Usage wire.Usage
}

type kit interface {
	format() exchange.Format
	path() string
	runnerRequest(msgs []tmsg, tools []string, stream bool, extra map[string]any) []byte
	upstreamResponse(s step, n int) []byte
	decodeUpstream(t *testing.T, body []byte) upReq
	decodeFinal(t *testing.T, res *http.Response, stream bool) final
	// namedChoice is the request members forcing the tool name.
	namedChoice(name string) map[string]any
}

var kits = []kit{openaiKit{}, anthropicKit{}, responsesKit{}}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func decodeEnvelope(s string) toolexec.Envelope {
	var e toolexec.Envelope
	_ = json.Unmarshal([]byte(s), &e)
	return e
}

func mergeExtra(top map[string]any, extra map[string]any) {
	for k, v := range extra {
		if v == nil {
			delete(top, k)
			continue
		}
		top[k] = v
	}
}
