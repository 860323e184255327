package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/owners"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/spend"
	"github.com/clawdapus/clawgo/internal/tracing"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// serveGeneration handles a POST to the generation endpoint of
// s.formats[fi]: the edge (openExchange), then the tool loop for an agent
// with managed tools, or the request relayed as it comes.
func (s *Server) serveGeneration(w http.ResponseWriter, r *http.Request, fi int) {
	f := s.formats[fi]
	m, ok := s.openExchange(w, r, fi, f.Endpoint().Route, func(rt *Route) string { return rt.urls[fi] }, false)
	if !ok {
		return
	}
	defer m.close()
	if m.mediated {
		// A transcript may keep slices of the body past the exchange;
		// the mediator sends the provider's model itself (x.Body keeps
		// the runner's).
		m.pb.disown()
		s.mediator.Mediate(w, r, m.x)
		return
	}
	upstream, err := upstreamBody(m.x.Body, m.body, m.info)
	if err != nil {
		s.failExchange(w, f, m.x, apierror.New(http.StatusInternalServerError, apierror.TypeAPI, "cllama: "+err.Error()))
		return
	}
	var strip usageAsker
	if a, ok := f.(usageAsker); ok && m.info.Stream {
		// The stream's usage is asked for upstream, to cost it.
		if b, asked := a.AskStreamUsage(slices.Concat(upstream...)); asked {
			upstream, strip = [][]byte{b}, a
		}
	}
	s.passthrough(w, r, f, m.x, strip, func(ctx context.Context) (*http.Response, error) { return m.send(ctx, upstream) })
}

// serveCount handles a POST to the token-counting endpoint of
// s.formats[fi] (wire.TokenCounter): the same edge, feeds and managed
// tools as a generation, then one upstream call whose answer is relayed
// as it comes. A count never streams.
func (s *Server) serveCount(w http.ResponseWriter, r *http.Request, fi int) {
	f := s.formats[fi]
	m, ok := s.openExchange(w, r, fi, f.(wire.TokenCounter).CountTokens().Route, func(rt *Route) string { return rt.countURLs[fi] }, true)
	if !ok {
		return
	}
	defer m.close()
	if m.mediated {
		m.pb.disown()
		s.countMediated(w, r, f, m.x)
		return
	}
	upstream, err := upstreamBody(m.x.Body, m.body, m.info)
	if err != nil {
		s.failExchange(w, f, m.x, apierror.New(http.StatusInternalServerError, apierror.TypeAPI, "cllama: "+err.Error()))
		return
	}
	s.relayCount(w, r, f, m.x, slices.Concat(upstream...))
}

// modelExchange is a model request past the edge: its exchange, the body
// it was built from, how it is sent, and whether the tool loop takes it.
type modelExchange struct {
	x        *exchange.Exchange
	info     requestInfo
	body     []byte
	pb       *pooledBody
	send     func(ctx context.Context, b [][]byte) (*http.Response, error)
	mediated bool
	close    func()
}

// openExchange runs the edge of a model route (endpoint, sent to the URL
// url gives for the routed provider): method, identity, admission, the
// body, routing, the model allow-list, stored-object ownership; then it
// builds and audits the exchange, refuses a broken manifest and adds the
// feeds. neverStreams marks a route whose upstream call never streams (a
// token count). ok is false when it answered the request itself. The
// caller calls close when the exchange is done.
func (s *Server) openExchange(w http.ResponseWriter, r *http.Request, fi int, endpoint string, url func(*Route) string, neverStreams bool) (m *modelExchange, ok bool) {
	f := s.formats[fi]
	format := exchange.Format(f.Name())
	start := s.now()
	id := s.newRequestID()
	w.Header().Set("X-Request-Id", id)
	// reject answers a request refused before it became an exchange.
	reject := func(a *agentctx.Agent, err error) {
		s.refuse(w, f, &recorder.Refusal{RequestID: id, Format: string(format), Agent: a, Start: start, Err: asStatus(err)})
	}

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		reject(nil, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "use POST "+r.URL.Path))
		return nil, false
	}
	token, ok := presentedToken(r)
	if !ok {
		reject(nil, errMissingCredentials)
		return nil, false
	}
	agent, err := s.authenticate(token)
	if err != nil {
		reject(nil, err)
		return nil, false
	}
	if !s.admit.enter(r.Context(), agent.ID) {
		reject(agent, s.agentBusy(agent.ID))
		return nil, false
	}
	body, pb, release, err := s.readBody(w, r, agent.ID, s.modelBodies())
	if err != nil {
		reject(agent, err)
		s.admit.leave(agent.ID)
		return nil, false
	}
	m = &modelExchange{body: body, pb: pb}
	m.close = s.closer(w, m, agent.ID, release)
	defer func() {
		if !ok {
			m.close()
		}
	}()
	info, err := scanRequest(body, f.Governed())
	if err != nil {
		reject(agent, err)
		return m, false
	}
	reg := s.providers.get(start)
	route, upstreamModel, err := s.router.resolve(reg, fi, info.Model)
	if err != nil {
		reject(agent, err)
		return m, false
	}
	info.Provider, info.Upstream = route.Name, upstreamModel
	if err := route.checkSpeaks(fi, endpoint); err != nil {
		reject(agent, err)
		return m, false
	}
	if err := allowModel(agent, route.Name+"/"+upstreamModel, info.Model); err != nil {
		reject(agent, err)
		return m, false
	}
	stored := s.stored[fi]
	var prev string
	var prevOwner owners.Owner
	if stored != nil {
		if prev, prevOwner, err = s.checkContinues(stored, body, agent, route); err != nil {
			reject(agent, err)
			return m, false
		}
	}
	// The conversation is found only when a budget counts per
	// conversation (a token count is never costed).
	conversation := ""
	if !neverStreams && s.spend.PerConversation(agent.Metadata.Budget) {
		conversation = conversationKey(f, agent.ID, body, prev, prevOwner.Conversation)
	}

	if neverStreams {
		info.Stream = false // a count never streams
	}
	call := &upstreamCall{route: route, fi: fi, reg: reg, urlOf: url, url: url(route), header: r.Header, rawQuery: r.URL.RawQuery, hold: pb}
	x := &exchange.Exchange{
		ID:            id,
		Start:         start,
		Agent:         agent,
		Pod:           s.cfg.Pod,
		Format:        format,
		Model:         info.Model,
		Provider:      info.Provider,
		UpstreamModel: info.Upstream,
		Stream:        info.Stream,
		Original:      body,
		Checked:       true, // scanRequest validated it
		Plain:         info.Plain,
		// The model is rewritten last, as the body leaves (upstreamBody):
		// a passthrough body is then sent without a copy.
		Body: body,
	}
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetAttributes(attribute.String("claw.agent", agent.ID), attribute.String("claw.format", string(format)),
			attribute.String("gen_ai.request.model", info.Upstream), attribute.String("claw.provider", info.Provider))
	}
	sendParts := s.sender(x, call, info.MaxOutput)
	x.Send = func(ctx context.Context, b []byte) (*http.Response, error) { return sendParts(ctx, oneSlice(b)) }
	x.SendParts = sendParts
	if stored != nil {
		x.Created = func(id string) { s.recordCreated(x, id, conversation) }
	}

	mediated := agent.ToolsErr == nil && agent.Managed() && s.mediator != nil
	s.auditExchange(x, audit.TypeRequest, func(e *audit.Event) { e.Mediated = mediated })

	if agent.ToolsErr != nil {
		s.refuseBrokenManifest(w, f, x)
		return m, false
	}
	if !neverStreams {
		// A token count is never costed; every generation is.
		if err := s.openSpend(x, conversation); err != nil {
			s.failExchange(w, f, x, apierror.New(http.StatusInternalServerError, apierror.TypeManifest, err.Error()+"; fix the pod and recompile with `claw compile`"))
			return m, false
		}
		m.x = x
	}
	if s.decorator != nil {
		if err := s.decorator.Decorate(r.Context(), x); err != nil {
			s.failExchange(w, f, x, apierror.New(http.StatusInternalServerError, apierror.TypeAPI, "context feed decoration failed: "+err.Error()))
			return m, false
		}
	}
	m.x, m.info, m.send, m.mediated = x, info, sendParts, mediated
	return m, true
}

// closer is m's close: the exchange's metering closed, its body and its
// agent's slot given back.
func (s *Server) closer(w http.ResponseWriter, m *modelExchange, agent string, release func()) func() {
	return func() {
		if m.x != nil && m.x.Spend.Syncs() {
			// The exchange is recorded: the runner has the end of its
			// answer, and the agent its slot and body budget back,
			// before the settlement reaches the disk.
			_ = http.NewResponseController(w).Flush()
			release()
			s.admit.leave(agent)
			m.x.Spend.Close(context.Background())
			return
		}
		if m.x != nil {
			m.x.Spend.Close(context.Background())
		}
		release()
		s.admit.leave(agent)
	}
}

// sender is how x's upstream calls are sent (sendChain: a key of the
// pool, the fallback chain): each admitted against the budgets (maxOutput
// is the request's output cap, for its reservation), a client span, its
// times noted on x.
func (s *Server) sender(x *exchange.Exchange, call *upstreamCall, maxOutput int) func(context.Context, [][]byte) (*http.Response, error) {
	model := x.UpstreamModel
	return func(ctx context.Context, b [][]byte) (*http.Response, error) {
		// Each call is admitted against the budgets before it leaves:
		// a relayed request once, a mediated turn once per round.
		if err := x.Spend.Admit(ctx, spend.Estimate{Model: x.Provider + "/" + model, PromptBytes: partsLen(b), MaxOutput: maxOutput}); err != nil {
			return nil, err
		}
		x.NoteSent(s.now())
		ctx, span := tracing.Start(ctx, "chat "+model, trace.SpanKindClient, attribute.String("gen_ai.request.model", model))
		defer span.End()
		resp, err := s.sendChain(ctx, x, call, model, b)
		if err == nil {
			x.NoteFirstByte(s.now())
			span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
			if resp.StatusCode >= 400 {
				span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
			}
		} else {
			span.SetStatus(codes.Error, "upstream call failed")
		}
		return resp, err
	}
}

// refuseBrokenManifest answers the exchange of an agent whose manifest is
// broken: that must never silently disable governance (issue 3 "The
// manifest"), so it is refused and the operator told. The runner is told
// the file and field; the values written there (service URLs, schema
// references) go to the operator only.
func (s *Server) refuseBrokenManifest(w http.ResponseWriter, f wire.Format, x *exchange.Exchange) {
	agent := x.Agent
	msg := fmt.Sprintf("agent %s: %v; fix the pod and recompile with `claw compile`", agent.ID, agent.ToolsErr)
	s.auditExchange(x, audit.TypeManifestError, func(e *audit.Event) {
		e.StatusCode, e.Error = http.StatusInternalServerError, msg
	})
	apierror.New(http.StatusInternalServerError, apierror.TypeManifest,
		fmt.Sprintf("agent %s: %s; fix the pod and recompile with `claw compile` (details in the cllama audit log)", agent.ID, withoutValues(agent.ToolsErr.Error()))).Write(w, f)
}

// countMediated counts the tokens of a mediated exchange as the mediator
// would present it.
func (s *Server) countMediated(w http.ResponseWriter, r *http.Request, f wire.Format, x *exchange.Exchange) {
	p, ok := s.mediator.(exchange.Presenter)
	if !ok {
		s.failExchange(w, f, x, apierror.New(http.StatusInternalServerError, apierror.TypeAPI, "token counting is not available with managed tools in this cllama"))
		return
	}
	presented, err := p.Present(r.Context(), x)
	if err != nil {
		s.failExchange(w, f, x, apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "cllama: "+err.Error()))
		return
	}
	s.relayCount(w, r, f, x, presented)
}

// relayCount sends a token count upstream and relays the answer. A count
// is no generation: it is audited (request and response events, without
// tokens: the count is not usage) and never written to session history.
func (s *Server) relayCount(w http.ResponseWriter, r *http.Request, f wire.Format, x *exchange.Exchange, body []byte) {
	resp, err := x.Send(r.Context(), body)
	if err != nil {
		s.upstreamFailed(w, r, f, x, err)
		return
	}
	defer resp.Body.Close()
	copyResponseHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	_, err = io.Copy(w, io.LimitReader(resp.Body, maxCaptureBytes))
	s.auditExchange(x, audit.TypeResponse, func(e *audit.Event) {
		e.StatusCode = resp.StatusCode
		if err != nil {
			e.Error = "relaying the token count: " + err.Error()
		}
	})
}

// bodyLimit is the largest body a route accepts and the setting that
// says so.
type bodyLimit struct {
	max     int64
	setting string
}

func (s *Server) modelBodies() bodyLimit {
	return bodyLimit{s.cfg.MaxBodyBytes, "CLLAMA_MAX_BODY_BYTES"}
}

func (s *Server) mcpBodies() bodyLimit {
	return bodyLimit{s.cfg.MCPMaxBodyBytes, "CLLAMA_MCP_MAX_BODY_BYTES"}
}

// bodyStep is the most of the budget a body holds beyond what has arrived
// of it. A body declared no larger is read in one read into a buffer of
// its size (pooled from 64 KiB); a larger one grows as it arrives.
const bodyStep = 1 << 20

// readBody reads the runner's body within limit, BodyReadTimeout (the
// deadline ServeHTTP set) and the in-flight body budget (MaxInflightBytes, agent's share of it
// MaxAgentInflightBytes). release gives the budget back and drops the
// handler's hold on pb; the caller calls it when the exchange no longer
// holds the body. pb, when not nil, is the pooled buffer body is in:
// readers of it that may outlive the handler hold it
// (upstreamCall.hold), and a body whose bytes may be kept is disowned. A
// request without a body reads as a nil body.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, agent string, limit bodyLimit) (body []byte, pb *pooledBody, release func(), err error) {
	none := func() {}
	if r.ContentLength > limit.max {
		return nil, nil, none, s.tooLarge(limit)
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil, none, nil
	}
	// ServeHTTP set the read deadline of a request with a body; once the
	// body is read it is lifted (an expired one would end the request).
	defer http.NewResponseController(w).SetReadDeadline(time.Time{})
	lease := bodyLease{a: s.admit, agent: agent}
	fail := func(err error) ([]byte, *pooledBody, func(), error) {
		lease.end()
		pb.drop()
		// The rest of the body is not read: the connection closes
		// after the answer (the server would otherwise wait for it).
		w.Header().Set("Connection", "close")
		if errors.Is(err, errOverBudget) || errors.Is(err, errAgentOverBudget) {
			return nil, nil, none, s.overBudget(agent, err)
		}
		return nil, nil, none, s.bodyError(err, limit)
	}
	if n := r.ContentLength; n > 0 && n <= bodyStep {
		// The hot path: a small body of declared length (the server's
		// framing stops it there).
		if err := lease.grow(n); err != nil {
			return fail(err)
		}
		pb = getBody(n)
		if pb != nil {
			body = pb.b
		} else {
			body = make([]byte, n)
		}
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return fail(err)
		}
	} else {
		src, size := io.Reader(r.Body), r.ContentLength
		if size <= 0 {
			src, size = http.MaxBytesReader(w, r.Body, limit.max), limit.max+1
		}
		if body, pb, err = readGrowing(src, size, r.ContentLength > 0, &lease); err != nil {
			return fail(err)
		}
	}
	n, held := lease.n, pb // copies: the closure allocates nothing more
	return body, pb, func() { s.admit.release(agent, n); held.drop() }, nil
}

// readGrowing reads a body of size bytes when known, else of fewer, into
// a buffer that doubles as bytes arrive (from bodyStep, or poolMinBody
// when the size is unknown), never past size. The lease grows with the
// buffer: a body holds of the budget what it sent (a buffer's worth ahead
// at most), never what it only declared. Buffers of pooled sizes come
// from the pools; pb is the buffer returned when pooled.
func readGrowing(src io.Reader, size int64, known bool, lease *bodyLease) (body []byte, pb *pooledBody, err error) {
	var buf []byte
	n := int64(0)
	first := int64(bodyStep)
	if !known {
		first = poolMinBody
	}
	for {
		if n == int64(len(buf)) {
			if n == size {
				break
			}
			grown := min(max(2*n, first), size)
			if err := lease.grow(grown - n); err != nil {
				return nil, pb, err
			}
			var nb []byte
			np := getBody(grown)
			if np != nil {
				nb = np.b
			} else {
				nb = make([]byte, grown)
			}
			copy(nb, buf)
			pb.drop()
			buf, pb = nb, np
		}
		k, err := src.Read(buf[n:])
		n += int64(k)
		if err == io.EOF {
			if known && n < size {
				return nil, pb, io.ErrUnexpectedEOF
			}
			break
		}
		if err != nil {
			return nil, pb, err
		}
	}
	if pb != nil {
		pb.b = pb.b[:n] // the part a body fills
	}
	return buf[:n], pb, nil
}

func (s *Server) tooLarge(limit bodyLimit) *apierror.Error {
	return apierror.New(http.StatusRequestEntityTooLarge, apierror.TypeRequestTooLarge,
		fmt.Sprintf("request body exceeds the %d-byte limit (%s)", limit.max, limit.setting))
}

func (s *Server) bodyError(err error, limit bodyLimit) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return s.tooLarge(limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return apierror.New(http.StatusRequestTimeout, apierror.TypeTimeout, "request body was not received in time")
	default:
		return badRequest("could not read the request body: " + err.Error())
	}
}

// quotedValue is a Go-quoted string (%q) inside an error message.
var quotedValue = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// withoutValues replaces the quoted values of a manifest error, and the
// path of the file, with placeholders, keeping the file and field names.
func withoutValues(msg string) string {
	msg = quotedValue.ReplaceAllString(msg, `"…"`)
	// A read error starts with the file's absolute path.
	if i := strings.Index(msg, "tools.json: "); i > 0 && strings.HasPrefix(msg, "/") {
		msg = msg[i:]
	}
	return msg
}

func sinceMS(now, start time.Time) int64 { return now.Sub(start).Milliseconds() }
