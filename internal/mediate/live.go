package mediate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/clawdapus/clawgo/internal/sse"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// A streaming turn of a format that can stream live (wire.LiveStreaming)
// asks the provider for a stream every round and sends the runner each
// round's text as it arrives, all rounds in one response lifecycle of the
// format. What the runner received is assembled as it goes (the format's
// wire.Assembler): it is the answer the runner will send back, so the
// continuity key ends at it, and it is the response history records.
type liveStream struct {
	f   wire.LiveStreaming
	asm wire.StreamAssembling
	enc wire.Live
	rs  *responder
	// seen assembles what the runner received.
	seen wire.Assembler
	// cancel ends the turn: a runner that cannot be written to is gone.
	cancel context.CancelFunc
	// shown is set once content (not only keepalives) went out: after
	// hidden rounds, the runner's answer then holds what the provider saw
	// in several messages (and, in a format of items, is led by the one
	// message item), and continuity restores those in its place.
	shown bool
}

// newLiveStream returns the live stream of a streaming turn, or nil when
// the format cannot stream live (the turn is then replayed at its end).
func newLiveStream(f wire.ToolLoop, rs *responder, includeUsage bool, cancel context.CancelFunc) *liveStream {
	lf, ok := f.(wire.LiveStreaming)
	if !ok {
		return nil
	}
	asm, ok := f.(wire.StreamAssembling)
	if !ok {
		return nil
	}
	enc := lf.NewLive(includeUsage)
	rs.liveEnc = enc
	return &liveStream{f: lf, asm: asm, enc: enc, rs: rs, seen: asm.NewAssembler(), cancel: cancel}
}

// isEventStream reports whether a response is an SSE stream.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// write sends events to the runner; a runner that cannot be written to
// ends the turn.
func (l *liveStream) write(events []wire.Event, content bool) *failure {
	if len(events) == 0 {
		return nil
	}
	for _, e := range events {
		l.seen.Observe(e.Name, e.Data)
	}
	if content {
		l.shown = true
	}
	if err := l.rs.events(events); err != nil {
		l.cancel()
		return &failure{status: 499, errType: apierror.TypeAPI, msg: "client closed the request", clientGone: true}
	}
	return nil
}

// observe passes one upstream event through the runner-side encoder.
func (l *liveStream) observe(name string, data []byte) *failure {
	out, err := l.enc.Observe(name, data)
	if err != nil {
		return internalFailure("upstream stream: %v", err)
	}
	return l.write(out, true)
}

// read reads one round's upstream stream, sending the runner what it may
// see as it comes, and returns the round's response (the stream
// assembled, as the non-streaming call would have answered).
func (l *liveStream) read(ctx, parent context.Context, t *turn, body io.Reader) (*wire.Response, *failure) {
	asm := l.asm.NewAssembler()
	var st wire.StreamState
	lim := &io.LimitedReader{R: body, N: t.m.opt.MaxResponseBytes + 1}
	for ev, err := range sse.Parse(lim, 0) {
		if err != nil {
			if lim.N <= 0 {
				break
			}
			return nil, t.contextFailure(ctx, parent, fmt.Sprintf("reading upstream stream %d: %v", t.calls, err))
		}
		if len(ev.Data) == 0 {
			continue // an upstream keepalive: cllama sends its own
		}
		st = l.f.ObserveStream(st, ev.Name, ev.Data)
		if st.UpstreamError != "" {
			return nil, &failure{status: http.StatusBadGateway, errType: upstreamErrorType(0, []byte(st.UpstreamError)),
				msg: fmt.Sprintf("provider %s sent an error in stream %d of a mediated turn: %s", t.x.Provider, t.calls, st.UpstreamError)}
		}
		asm.Observe(ev.Name, ev.Data)
		if fail := l.observe(ev.Name, ev.Data); fail != nil {
			return nil, fail
		}
	}
	if lim.N <= 0 {
		return nil, internalFailure("upstream stream %d exceeds %d bytes", t.calls, t.m.opt.MaxResponseBytes)
	}
	if !st.Done() {
		return nil, t.contextFailure(ctx, parent, fmt.Sprintf("upstream stream %d ended before its end", t.calls))
	}
	raw, note := asm.Result()
	if note != "" {
		return nil, internalFailure("upstream stream %d: %s", t.calls, note)
	}
	resp, err := l.f.ParseResponse(raw)
	if err != nil {
		return nil, internalFailure("upstream stream %d: %v", t.calls, err)
	}
	return resp, l.endRound()
}

// replay sends the runner a round the provider answered without
// streaming, as the format's stream of it (some providers ignore stream).
func (l *liveStream) replay(resp *wire.Response) *failure {
	events, err := l.f.StreamEvents(resp, resp.Usage, true)
	if err != nil {
		return internalFailure("rendering the stream: %v", err)
	}
	for _, e := range events {
		if len(e.Data) == 0 {
			continue
		}
		if fail := l.observe(e.Name, e.Data); fail != nil {
			return fail
		}
	}
	return l.endRound()
}

func (l *liveStream) endRound() *failure {
	out, err := l.enc.EndRound()
	if err != nil {
		return internalFailure("upstream stream: %v", err)
	}
	return l.write(out, false)
}

// finish ends the runner's stream with the final response and keeps the
// turn's hidden rounds.
func (l *liveStream) finish(t *turn, resp *wire.Response) outcome {
	events, err := l.enc.Finish(resp, t.usage)
	if err != nil {
		return outcome{fail: internalFailure("rendering the stream: %v", err)}
	}
	for _, e := range events {
		l.seen.Observe(e.Name, e.Data)
	}
	body, note := l.seen.Result()
	if t.x.Created != nil {
		// The runner may read the response it is answered with: its owner
		// is recorded before the stream's end. The id is the one the runner
		// received (a lifecycle's first round's).
		if seen, err := l.f.ParseResponse(body); err == nil && seen.ID != "" {
			t.x.Created(seen.ID)
		}
	}
	l.alias(t, body, resp)
	if len(t.hidden) > 0 && !t.req.ProviderHolds {
		l.remember(t, resp, body, note)
	}
	// The answer was produced: a runner gone now misses only its end.
	_ = l.rs.events(events)
	return outcome{resp: resp, body: body}
}

// replacesAnswer leads a continuity entry whose messages stand in the
// place of the runner's answer item (the key's last item) rather than
// before it: the hidden rounds, then what the provider saw of the final
// response (wire.LiveStreaming.ReplacedTail).
var replacesAnswer = json.RawMessage(`{"cllama_continuity":"replaces_answer"}`)

// entryReplaces splits a continuity entry into its messages and whether
// they replace the answer item.
func entryReplaces(entry []json.RawMessage) ([]json.RawMessage, bool) {
	if len(entry) > 0 && bytes.Equal(entry[0], replacesAnswer) {
		return entry[1:], true
	}
	return entry, false
}

// remember keeps the turn's hidden rounds under the key of the answer the
// runner received (body, assembled from what was sent).
func (l *liveStream) remember(t *turn, resp *wire.Response, body []byte, note string) {
	if note != "" {
		t.m.auditError(t.x, "continuity not kept: the streamed answer could not be read back to key it ("+note+")")
		return
	}
	seen, err := l.f.ParseResponse(body)
	if err != nil {
		t.m.auditError(t.x, "continuity not kept: the streamed answer could not be read back to key it: "+err.Error())
		return
	}
	msgs, err := l.f.AssistantTurn(seen, nil)
	if err != nil {
		return
	}
	entry := t.hidden
	if l.shown {
		tail, err := l.f.ReplacedTail(resp)
		if err != nil {
			t.m.auditError(t.x, "continuity not kept: "+err.Error())
			return
		}
		entry = make([]json.RawMessage, 0, 1+len(t.hidden)+len(tail))
		entry = append(append(append(entry, replacesAnswer), t.hidden...), tail...)
	}
	t.keep(msgs, entry)
}

// aliasKey is where the final response id of a lifecycle whose id is
// another round's is kept.
func aliasKey(f wire.Format, agent, id string) string {
	return continuityKey(f.Name(), agent, chain(sha256.Sum256([]byte("response alias\x00"+id))))
}

// alias keeps, for a format whose requests continue from a response id,
// the final round's id under the lifecycle's when they differ (text was
// shown in a hidden round): a runner continuing from the id it received
// continues from the turn's end (continueFrom).
func (l *liveStream) alias(t *turn, body []byte, resp *wire.Response) {
	if _, ok := l.f.(wire.LiveContinuing); !ok || t.m.opt.Continuity == nil {
		return
	}
	seen, err := l.f.ParseResponse(body)
	if err != nil || seen.ID == "" || seen.ID == resp.ID || resp.ID == "" {
		return
	}
	err = t.m.opt.Continuity.PutOnce(context.WithoutCancel(t.ctx), aliasKey(l.f, t.x.Agent.ID, seen.ID), []json.RawMessage{wire.Quote(resp.ID)})
	if err != nil {
		t.m.auditError(t.x, "continuity store: the final response id of a streamed turn was not kept: "+err.Error())
	}
}

// continueFrom makes a request continuing from a live lifecycle's id
// continue from that turn's final response.
func continueFrom(ctx context.Context, f wire.ToolLoop, store ContinuityStore, agent string, req *wire.Request) {
	lc, ok := f.(wire.LiveContinuing)
	if !ok || store == nil {
		return
	}
	id := lc.ContinuesFrom(req)
	if id == "" {
		return
	}
	entry, ok := store.Get(ctx, aliasKey(f, agent, id))
	if !ok || len(entry) != 1 {
		return
	}
	if final, ok := wire.String(entry[0]); ok && final != "" {
		lc.ContinueFrom(req, final)
	}
}
