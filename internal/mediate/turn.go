package mediate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/spend"
	"github.com/clawdapus/clawgo/internal/tracing"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// turn is one runner request under mediation: the upstream request as it
// grows round by round, and what happened so far.
type turn struct {
	// ctx is the runner's request's: continuity reads and writes across
	// the network are bounded by it.
	ctx    context.Context
	m      *Mediator
	x      *exchange.Exchange
	f      wire.ToolLoop
	policy manifest.Policy
	pres   *presentation
	req    *wire.Request
	// visible is the continuity chain over the runner's own messages.
	visible chain
	// hidden are the messages this turn added (assistant and results).
	hidden []json.RawMessage
	rounds []history.Round
	usage  wire.Usage
	// roundCost is what the last model call cost (its round's record).
	roundCost audit.Cost
	calls     int // upstream calls made
	// managed counts the managed calls answered so far (run or refused
	// one by one), against max_tool_calls_per_turn.
	managed int
	seen    map[string]*seenCall
	// runnerTools is how many of req.Tools are the runner's own.
	runnerTools int
	// Tool policy: the managed calls cllama ran in the conversation before
	// this turn and their rounds (from the hidden rounds it restored, never
	// from the runner's messages), the calls this turn admitted so far, in
	// the model's order, and what the last presentation withheld.
	sessionCalled []string
	sessionRounds int
	called        []string
	filtered      []audit.Filtered
	// held are the handles of kept results this conversation holds: those
	// in the hidden rounds restored (what cllama itself answered in its
	// earlier turns) and those this turn's calls produced (results.go).
	held map[string]bool
	// live is set when the runner streams and the format streams live:
	// each round streams upstream and its text goes on to the runner.
	live *liveStream
	// budget is total_timeout_ms, paused while a call waits for a
	// person's decision.
	budget *budget
}

// outcome is how a turn ended: a final response, or a failure.
type outcome struct {
	resp *wire.Response
	// body is resp rendered as the runner's JSON response (usage summed).
	body []byte
	fail *failure
}

// failure is a turn that did not produce an answer.
type failure struct {
	status  int
	errType string
	msg     string
	// upstream holds an upstream error body relayed verbatim.
	upstream []byte
	// clientGone is set when the runner disconnected: nothing is written.
	clientGone bool
	// fields are more members of the error object (a budget refusal's
	// scope, limit, spent, resets_at), and retryAfter its Retry-After in
	// seconds (0: none).
	fields     map[string]any
	retryAfter int
}

func (f *failure) Error() string { return f.msg }

// apiError is the failure as cllama writes it to the runner (when it is
// not an upstream error relayed as it came).
func (f *failure) apiError() *apierror.Error {
	return &apierror.Error{Status: f.status, Type: f.errType, Message: f.msg, Fields: f.fields, RetryAfter: f.retryAfter}
}

func internalFailure(format string, args ...any) *failure {
	return &failure{status: http.StatusBadGateway, errType: apierror.TypeToolMediation, msg: "cllama: " + fmt.Sprintf(format, args...)}
}

// newTurn parses the request, restores continuity and presents the
// managed tools, ready for its first upstream call.
func (m *Mediator) newTurn(ctx context.Context, x *exchange.Exchange, f wire.ToolLoop) (*turn, *failure) {
	t, fail := m.presentTurn(ctx, x, f)
	if fail != nil {
		return nil, fail
	}
	f.PrepareUpstream(t.req)
	return t, nil
}

// presentTurn is newTurn up to the upstream call's own settings: the
// request as the runner sent it, with continuity restored and the managed
// tools presented.
func (m *Mediator) presentTurn(ctx context.Context, x *exchange.Exchange, f wire.ToolLoop) (*turn, *failure) {
	t := &turn{ctx: ctx, m: m, x: x, f: f, policy: x.Agent.Tools.Policy.WithDefaults(), seen: map[string]*seenCall{}}
	var req *wire.Request
	var err error
	if x.Checked {
		req, err = f.ParseCheckedRequest(x.Body)
	} else {
		req, err = wire.ParseRequest(f, x.Body)
	}
	if err != nil {
		return nil, &failure{status: http.StatusBadRequest, errType: apierror.TypeInvalidRequest, msg: "cllama: request body: " + err.Error()}
	}
	if x.UpstreamModel != "" && x.UpstreamModel != x.Model {
		// The edge leaves the runner's "<provider>/<model>" in the body
		// (rewriting it would copy the body); the provider gets its own.
		req.Fields["model"] = wire.Quote(x.UpstreamModel)
	}
	t.req = req
	if req.ProviderHolds {
		continueFrom(ctx, f, m.opt.Continuity, x.Agent.ID, req)
	}
	cat, err := m.catalogs.get(x.Agent.Tools, m.loopList)
	if err != nil {
		return nil, &failure{status: http.StatusInternalServerError, errType: apierror.TypeManifest, msg: "cllama: agent " + x.Agent.ID + ": " + err.Error()}
	}
	if t.pres, err = cat.present(f, req.ToolNames); err != nil {
		return nil, internalFailure("presenting tools: %v", err)
	}
	var restored []json.RawMessage
	req.Messages, t.visible, restored = restore(ctx, f, m.canon, m.opt.Continuity, x.Agent.ID, req.Messages)
	// Managed tools are appended after the runner's own (issue 151: additive).
	t.runnerTools = len(req.Tools)
	req.Tools = append(req.Tools, t.pres.defs...)
	if fail := t.holdRestored(restored); fail != nil {
		return nil, fail
	}
	if t.hasRules() {
		t.scanSession(restored)
		t.applyPolicy()
	}
	if err := f.RewriteToolChoice(req, t.pres.choiceTarget); err != nil {
		return nil, &failure{status: http.StatusBadRequest, errType: apierror.TypeInvalidRequest, msg: "cllama: tool_choice: " + err.Error()}
	}
	return t, nil
}

// run is the mediation loop (spec 000 "Current rule"; 002 "Mediation
// Loop"). Each iteration asks the model once and dispatches on who owns
// the calls in its answer.
func (t *turn) run(parent context.Context) outcome {
	b := newBudget(parent, time.Duration(t.policy.TotalTimeoutMS)*time.Millisecond)
	defer b.stop()
	t.budget = b
	var ctx context.Context = b
	for {
		out, done := t.round(ctx, parent)
		if done {
			return out
		}
	}
}

// round is one iteration of run: one model call and, when it asks for
// managed tools, their calls; a span of its own in traces.
func (t *turn) round(ctx, parent context.Context) (outcome, bool) {
	ctx, span := tracing.Start(ctx, "claw.round", trace.SpanKindInternal, attribute.Int("claw.round", t.calls+1))
	defer span.End()
	if len(t.rounds) > 0 && t.hasRules() {
		// A call of the last round may have unlocked (or locked) a tool:
		// the model is offered what the rules allow now.
		t.applyPolicy()
	}
	resp, fail := t.ask(ctx, parent)
	if fail != nil {
		span.SetStatus(codes.Error, fail.errType)
		return outcome{fail: fail}, true
	}
	span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", resp.Usage.Prompt()), attribute.Int("gen_ai.usage.output_tokens", resp.Usage.Output),
		attribute.Int("claw.tool_calls", len(resp.Calls)))
	if len(resp.Calls) == 0 {
		return t.finish(resp), true
	}
	owners := t.ownership(resp.Calls)
	if owners.kind == nativeOnly {
		// Cases 2 and 4: the runner executes its own calls; finish
		// stores the handoff when hidden rounds came first.
		return t.finish(resp), true
	}
	if len(t.rounds) >= t.policy.MaxRounds {
		span.SetStatus(codes.Error, apierror.TypeBudgetExhausted)
		return outcome{fail: &failure{status: http.StatusBadGateway, errType: apierror.TypeBudgetExhausted,
			msg: fmt.Sprintf("cllama: managed tool budget exhausted: max_rounds (%d) reached and the model still asks for tools; no answer was produced", t.policy.MaxRounds)}}, true
	}
	if fail := t.playRound(ctx, parent, resp, owners); fail != nil {
		span.SetStatus(codes.Error, fail.errType)
		return outcome{fail: fail}, true
	}
	return outcome{}, false
}

// ask makes one upstream call with the request as it stands.
func (t *turn) ask(ctx, parent context.Context) (*wire.Response, *failure) {
	body, err := t.req.EncodeParts()
	if err != nil {
		return nil, internalFailure("encoding the upstream request: %v", err)
	}
	t.calls++
	for attempt := 0; ; attempt++ {
		status, raw, wait, resp, fail := t.send(ctx, parent, body)
		if fail != nil {
			return nil, fail
		}
		if status >= 200 && status <= 299 {
			if resp == nil {
				var err error
				if resp, err = t.f.ParseResponse(raw); err != nil {
					return nil, internalFailure("upstream response %d: %v", t.calls, err)
				}
				if t.live != nil {
					if fail := t.live.replay(resp); fail != nil {
						return nil, fail
					}
				}
			}
			t.usage = t.usage.Add(resp.Usage)
			t.roundCost = t.x.Spend.Settle(ctx, resp.Usage, true)
			return resp, nil
		}
		t.x.Spend.Release(ctx) // the provider refused it: nothing spent
		if retriable(status) {
			// The provider is busy: nothing of the turn has reached the
			// runner but keepalives, so try again within the turn's budget.
			if d, ok := t.retryDelay(ctx, attempt, wait); ok {
				t.m.auditRetry(t, status, attempt+1, d)
				select {
				case <-time.After(d):
					continue
				case <-ctx.Done():
					return nil, t.contextFailure(ctx, parent, "waiting to retry")
				}
			}
			// Given up: the provider's own status and error, in the
			// response's status when no byte was sent, else in-band.
			return nil, &failure{status: status, errType: upstreamErrorType(status, raw),
				msg:      fmt.Sprintf("provider %s answered %d on call %d of a mediated turn after %d tries: %s", t.x.Provider, status, t.calls, attempt+1, snippet(raw)),
				upstream: raw}
		}
		if t.calls == 1 {
			// The provider refused the runner's own request: relay it as
			// the passthrough path would.
			return nil, &failure{status: status, errType: apierror.TypeUpstream, msg: fmt.Sprintf("upstream status %d: %s", status, snippet(raw)), upstream: raw}
		}
		return nil, internalFailure("upstream returned status %d on call %d of a mediated turn: %s", status, t.calls, snippet(raw))
	}
}

// send makes one upstream call and reads its answer (bounded), with the
// provider's Retry-After. A live turn's stream is read as it comes, its
// text sent on to the runner, and its response returned assembled.
func (t *turn) send(ctx, parent context.Context, body [][]byte) (int, []byte, string, *wire.Response, *failure) {
	var res *http.Response
	var err error
	if t.x.SendParts != nil {
		res, err = t.x.SendParts(ctx, body)
	} else {
		res, err = t.x.Send(ctx, bytes.Join(body, nil))
	}
	if r, ok := spend.AsRefusal(err); ok {
		// A budget refused the round before it left.
		e := r.APIError(t.m.opt.Now())
		return 0, nil, "", nil, &failure{status: e.Status, errType: e.Type, msg: e.Message, fields: e.Fields, retryAfter: e.RetryAfter}
	}
	if err != nil {
		t.x.Spend.Release(ctx)
		return 0, nil, "", nil, t.contextFailure(ctx, parent, fmt.Sprintf("upstream call %d failed: %v", t.calls, err))
	}
	defer res.Body.Close()
	if t.live != nil && res.StatusCode >= 200 && res.StatusCode <= 299 && isEventStream(res.Header) {
		resp, fail := t.live.read(ctx, parent, t, res.Body)
		return res.StatusCode, nil, "", resp, fail
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, t.m.opt.MaxResponseBytes+1))
	if err != nil {
		return 0, nil, "", nil, t.contextFailure(ctx, parent, fmt.Sprintf("reading upstream response %d: %v", t.calls, err))
	}
	if int64(len(raw)) > t.m.opt.MaxResponseBytes {
		return 0, nil, "", nil, internalFailure("upstream response %d exceeds %d bytes", t.calls, t.m.opt.MaxResponseBytes)
	}
	return res.StatusCode, raw, res.Header.Get("Retry-After"), nil, nil
}

// retriable are the statuses of a provider that is busy, not of a request
// that is wrong: rate limited (429), unavailable (503), overloaded (529).
func retriable(status int) bool { return status == 429 || status == 503 || status == 529 }

// retryDelay is the wait before retry number attempt+1: the provider's
// Retry-After (seconds or an HTTP date), else an exponential backoff with
// jitter; capped by RetryMaxDelay. It reports false when the retries are
// used up or the wait would outlast the turn's remaining budget.
func (t *turn) retryDelay(ctx context.Context, attempt int, retryAfter string) (time.Duration, bool) {
	o := t.m.opt
	if attempt >= o.UpstreamRetries {
		return 0, false
	}
	d := o.RetryBaseDelay << attempt
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1)) // jitter: [d/2, d]
	if retryAfter != "" {
		if secs, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && secs >= 0 {
			d = time.Duration(secs) * time.Second
		} else if at, err := http.ParseTime(retryAfter); err == nil {
			d = max(at.Sub(o.Now()), 0)
		}
	}
	d = min(d, o.RetryMaxDelay)
	if deadline, ok := ctx.Deadline(); ok && o.Now().Add(d).After(deadline) {
		return 0, false
	}
	return d, true
}

// upstreamErrorType is the error type a provider's error body names
// ({"error":{"type":…}} in both formats), else the one its status means.
func upstreamErrorType(status int, raw []byte) string {
	var doc struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &doc) == nil && doc.Error.Type != "" && len(doc.Error.Type) <= 64 {
		return doc.Error.Type
	}
	if status == http.StatusTooManyRequests {
		return apierror.TypeRateLimit
	}
	return apierror.TypeOverloaded
}

// contextFailure tells a disconnected runner and an exhausted total budget
// apart from other transport failures.
func (t *turn) contextFailure(ctx, parent context.Context, msg string) *failure {
	switch {
	case parent.Err() != nil:
		return &failure{status: 499, errType: apierror.TypeAPI, msg: "client closed the request", clientGone: true}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &failure{status: http.StatusBadGateway, errType: apierror.TypeBudgetExhausted,
			msg: fmt.Sprintf("cllama: managed tool budget exhausted: total_timeout_ms (%d) elapsed before the model answered", t.policy.TotalTimeoutMS)}
	}
	return internalFailure("%s", msg)
}

// finish renders the final response and stores continuity. An answer to
// the first call goes back byte for byte (spec 000: a native-only or text
// response is returned "unchanged"); after hidden rounds the body is
// re-rendered with usage summed over every call.
func (t *turn) finish(resp *wire.Response) outcome {
	if t.live != nil {
		return t.live.finish(t, resp)
	}
	body := resp.Raw
	if t.calls > 1 {
		var err error
		if body, err = t.f.FinalBody(resp, t.usage); err != nil {
			return outcome{fail: internalFailure("rendering the response: %v", err)}
		}
	}
	if len(t.hidden) > 0 && !t.req.ProviderHolds {
		t.remember(resp)
	}
	return outcome{resp: resp, body: body}
}

// remember stores this turn's hidden messages under the chain ending at the
// message the runner will keep: the final answer or the native tool calls
// (its first item, where the answer is several).
// A key names one turn for good (Store.PutOnce): a second turn ending at
// the same visible transcript makes it ambiguous rather than taking it
// over, so one conversation never receives another's hidden rounds.
func (t *turn) remember(resp *wire.Response) {
	msgs, err := t.f.AssistantTurn(resp, nil)
	if err != nil {
		return
	}
	t.keep(msgs, t.hidden)
}

// keep stores entry under the chain ending at msgs, the answer the runner
// keeps.
func (t *turn) keep(msgs, entry []json.RawMessage) {
	// The key ends at the answer's first item that takes part in keys:
	// the one restore finds the hidden rounds before.
	var key string
	for _, m := range msgs {
		if c := canonOf(t.f, t.m.canon, m); c.role != wire.RoleSystem && c.role != wire.RolePrelude {
			key = continuityKey(t.f.Name(), t.x.Agent.ID, t.visible.next(c.digest))
			break
		}
	}
	if key == "" {
		return
	}
	// The answer was produced: it is kept even if the runner has gone.
	ctx := context.WithoutCancel(t.ctx)
	err := t.m.opt.Continuity.PutOnce(ctx, key, entry)
	switch {
	case errors.Is(err, ErrAmbiguous):
		t.m.auditError(t.x, "continuity not kept: another turn of this agent already ended at the same visible transcript (same messages, same answer), and nothing the runner sends back tells the two conversations apart; the hidden tool rounds of neither will be restored")
	case errors.Is(err, ErrEntryTooLarge):
		t.m.auditError(t.x, fmt.Sprintf("continuity not kept: the hidden tool rounds of this turn (%d messages) are too large to keep (%v; CLLAMA_CONTINUITY_MAX_ENTRY_BYTES), so the model will not see them in this conversation's next request", len(entry), err))
	case err != nil:
		t.m.auditError(t.x, "continuity store: "+err.Error())
	}
}

func snippet(b []byte) string {
	const max = 512
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
