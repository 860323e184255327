package toolcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/resultstore"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/wire"
)

// Results over the cap (issue 37): a managed tool's result longer than
// max_tool_result_bytes is kept whole in a resultstore.Store, and the
// caller gets an envelope within the cap holding its head, truncated,
// original_bytes (the result's bytes as the service returned them: a
// text answer's bytes, a JSON answer's compact form) and result_handle.
// The built-in tool ReadResult reads it by range or pattern, inside
// cllama. A result over the store's absolute bound is kept up to it, and
// its envelope says so (note).

// CodeUnknownHandle answers a read of a handle that is unknown, expired,
// evicted, malformed, or another agent's or conversation's: one answer
// for all, so a model learns nothing of handles it does not hold.
const CodeUnknownHandle = "unknown_handle"

// ReadResult is the built-in tool claw.read_result. Callers offer it
// (mediated: in a conversation holding a handle; /mcp: to an agent
// whose tools can produce one) and pass it to Run like any tool: Run
// answers it from Call.Results, never calling a Runner.
var ReadResult = &manifest.Tool{Name: resultstore.ToolName, Description: resultstore.ToolDescription, InputSchema: resultstore.ToolSchema,
	Annotations: &manifest.Annotations{ReadOnly: ptr(true), ParallelSafe: ptr(true)}}

func ptr[T any](v T) *T { return &v }

// Results is where a call's kept result goes and reads come from.
type Results struct {
	Store resultstore.Store
	// Scope is the caller's agent and conversation.
	Scope resultstore.Scope
	// Held, when set, reports whether the conversation holds a handle
	// (mediated mode: its hidden rounds show it); a read of any other is
	// unknown_handle before the store is asked.
	Held func(handle string) bool
}

func (r *Results) keeps() bool { return r != nil && r.Store != nil }

// Kept is what Run did with a kept result: stored one (Read false) or
// read one.
type Kept struct {
	Read   bool
	Handle string
	// Size is the bytes stored (a store) or returned (a read).
	Size int
	// Offset and Length are a range read's, Pattern a search's.
	Offset, Length int64
	Pattern        string
}

// TTL is how long a kept result lives under policy.
func TTL(policy manifest.Policy) time.Duration {
	if policy.ResultTTLMS > 0 {
		return time.Duration(policy.ResultTTLMS) * time.Millisecond
	}
	return resultstore.DefaultTTL
}

// keep stores env's data (a successful result over limit) and returns
// the envelope the caller sees. A store that fails leaves the result cut
// as it would be without one, saying why.
func keep(ctx context.Context, c Call, env toolexec.Envelope, limit int) (toolexec.Envelope, *Kept) {
	body := []byte(env.Data)
	if s, ok := wire.String(env.Data); ok {
		body = []byte(s)
	}
	h, err := c.Results.Store.Put(ctx, c.Results.Scope, c.Tool.Name, body, TTL(c.Policy))
	if err != nil {
		cut := Check(toolexec.Envelope{OK: true, Data: env.Data}, limit)
		cut.Note = "the full result could not be kept for reading (" + storeError(err) + "); only this part is available"
		if len(Encode(cut)) > limit {
			cut.Note = ""
		}
		return cut, nil
	}
	out := toolexec.Envelope{OK: true, Truncated: true, OriginalBytes: len(body), ResultHandle: h}
	if env.Truncated {
		// Cut by the executor at the store's absolute bound: the size is
		// the service's, and only the first bytes were kept.
		out.OriginalBytes, out.OriginalBytesAtLeast = env.OriginalBytes, env.OriginalBytesAtLeast
		out.Note = fmt.Sprintf("the result was over cllama's bound of %d bytes for one result: only its first %d bytes were kept and can be read", c.Results.Store.Limits().MaxResultBytes, len(body))
	}
	out.Data = head(out, body, limit)
	if out.Note != "" && len(Encode(out)) > limit {
		// A cap too small for the whole note: the short one.
		out.Note = fmt.Sprintf("only the first %d bytes were kept", len(body))
		out.Data = head(out, body, limit)
	}
	return out, &Kept{Handle: h, Size: len(body)}
}

// head is body's first bytes as a JSON string, as many as fit env's
// encoding within limit.
func head(env toolexec.Envelope, body []byte, limit int) json.RawMessage {
	env.Data = json.RawMessage(`""`)
	budget := max(32, limit-len(Encode(env))+2)
	data, _ := jsontop.AppendStringWithin(make([]byte, 0, budget), string(body[:min(len(body), budget)]), budget)
	return data
}

func storeError(err error) string {
	if errors.Is(err, resultstore.ErrTooLarge) {
		return "over the store's bound of one result"
	}
	return "the result store failed"
}

// readResult answers a call of ReadResult.
func readResult(ctx context.Context, c Call) Outcome {
	a, err := resultstore.ParseArgs(c.Arguments)
	if err != nil {
		return Outcome{Envelope: toolexec.Fail(toolexec.CodeInvalidArguments, err.Error(), toolexec.RPCInvalidParams)}
	}
	unknown := toolexec.Fail(CodeUnknownHandle, "unknown_handle: no kept result of this conversation has this handle (it may have expired or been evicted); call the tool again for a fresh one", 0)
	if !c.Results.keeps() || (c.Results.Held != nil && !c.Results.Held(a.Handle)) {
		return Outcome{Envelope: unknown}
	}
	b, ok, err := c.Results.Store.Open(ctx, c.Results.Scope, a.Handle)
	switch {
	case err != nil:
		return Outcome{Envelope: toolexec.Fail(toolexec.CodeUnavailable, "the result store did not answer; retry", 0)}
	case !ok:
		return Outcome{Envelope: unknown}
	}
	defer b.Close()
	budget := c.Policy.MaxToolResultBytes - len(`{"ok":true,"data":}`)
	var ans resultstore.Answer
	kept := &Kept{Read: true, Handle: a.Handle, Offset: a.Offset}
	if a.Grep != "" {
		ans, err = resultstore.Grep(b, a, budget)
		kept.Pattern = a.Grep
	} else {
		ans, err = resultstore.ReadRange(b, a, budget)
		kept.Length = int64(ans.Bytes)
	}
	if errors.Is(err, resultstore.ErrArgs) {
		return Outcome{Envelope: toolexec.Fail(toolexec.CodeInvalidArguments, err.Error(), toolexec.RPCInvalidParams)}
	}
	if err != nil {
		return Outcome{Envelope: toolexec.Fail(toolexec.CodeUnavailable, "the kept result could not be read; retry", 0)}
	}
	kept.Size = ans.Bytes
	return Outcome{Envelope: toolexec.Envelope{OK: true, Data: ans.Data}, Kept: kept}
}

// KeptEvent is the audit event of what f's call did with a kept result
// (result_stored or result_read), when it did anything.
func (f *Fact) KeptEvent() (audit.Event, bool) {
	k := f.Kept
	if k == nil {
		return audit.Event{}, false
	}
	e := audit.Event{ClawID: f.Agent, Type: audit.TypeResultStored, RequestID: f.RequestID, Format: f.Format, Model: f.Model,
		Mediated: f.Mode == manifest.ModeMediated, Mode: f.Mode, Round: f.Round, Handle: k.Handle, Bytes: audit.Ptr(k.Size)}
	if f.Tool != nil {
		e.Tool = f.Tool.Name
	}
	if k.Read {
		e.Type = audit.TypeResultRead
		if k.Pattern != "" {
			e.Pattern = k.Pattern
			if k.Offset > 0 {
				e.Offset = audit.Ptr(k.Offset)
			}
		} else {
			e.Offset, e.Length = audit.Ptr(k.Offset), audit.Ptr(k.Length)
		}
	}
	return e, true
}
