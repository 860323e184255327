package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/owners"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// Stored objects (wire.Stored: the Responses API's responses) belong to
// the agent whose request created them, at the provider that keeps them
// (docs/cllama.md "Stored responses"). The proxy records each id it sees created
// (package owners), relays the object routes for the owner only, to the
// owning provider, and refuses a generation that continues from an object
// that is not the caller's, or at another provider. An id that is not the
// caller's is answered as an unknown one: nobody learns that another agent
// owns it.

// idSegment is the placeholder of an object's id in wire.ObjectRoute.
const idSegment = "{id}"

// storedFormat is what the proxy keeps of a format's wire.Stored ability.
type storedFormat struct {
	wire.Stored
	// noun is what its objects are called in messages ("response").
	noun string
}

// objectRoute is one route on a stored object, split around its id.
type objectRoute struct {
	wire.ObjectRoute
	f      wire.Format
	noun   string
	prefix string // Route before the id ("/v1/responses/")
	suffix string // Route after the id ("" or "/input_items")
}

// storedFormats indexes the Stored formats of fs (nil entries for the
// others) and lists their object routes, checking that each route and
// upstream path holds one {id} segment.
func storedFormats(fs []wire.Format) ([]*storedFormat, []objectRoute, error) {
	byIndex := make([]*storedFormat, len(fs))
	var routes []objectRoute
	seen := map[string]bool{}
	for i, f := range fs {
		st, ok := f.(wire.Stored)
		if !ok {
			continue
		}
		byIndex[i] = &storedFormat{Stored: st, noun: "object"}
		for _, or := range st.ObjectRoutes() {
			prefix, suffix, _ := strings.Cut(or.Route, idSegment)
			up, upRest, _ := strings.Cut(or.Upstream, idSegment)
			key := or.Method + " " + or.Route
			switch {
			case !isSegment(or.Route) || !isSegment(or.Upstream) || !strings.HasPrefix(prefix, "/") || !strings.HasPrefix(up, "/") ||
				strings.Contains(suffix, idSegment) || strings.Contains(upRest, idSegment):
				return nil, nil, fmt.Errorf("proxy: format %s: object route %s and upstream %s must each hold one %s path segment", f.Name(), or.Route, or.Upstream, idSegment)
			case or.Method != http.MethodGet && or.Method != http.MethodDelete && or.Method != http.MethodPost:
				return nil, nil, fmt.Errorf("proxy: format %s: object route %s: method %q is not GET, DELETE or POST", f.Name(), or.Route, or.Method)
			case seen[key]:
				return nil, nil, fmt.Errorf("proxy: object route %s declared twice", key)
			}
			seen[key] = true
			noun := strings.TrimSuffix(path.Base(prefix), "s")
			byIndex[i].noun = noun
			routes = append(routes, objectRoute{ObjectRoute: or, f: f, noun: noun, prefix: prefix, suffix: suffix})
		}
	}
	return byIndex, routes, nil
}

// isSegment reports whether p holds {id} as a whole path segment.
func isSegment(p string) bool {
	before, after, ok := strings.Cut(p, idSegment)
	return ok && strings.HasSuffix(before, "/") && (after == "" || after[0] == '/')
}

// matchObject returns the id p names on the route split into prefix and
// suffix: one path segment, neither empty nor "." or "..".
func matchObject(prefix, suffix, p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, prefix)
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, suffix)
	if !ok || !validObjectID(id) {
		return "", false
	}
	return id, true
}

// validObjectID reports whether id can name a stored object on a path:
// one segment, never a relative one.
func validObjectID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.Contains(id, "/")
}

// upstreamObjectPath is an object route's upstream path for id, the id
// escaped as one path segment.
func upstreamObjectPath(upstream, id string) string {
	return strings.Replace(upstream, idSegment, url.PathEscape(id), 1)
}

// serveObjectRoutes serves r when its path is one of an object route's,
// and reports whether it was.
func (s *Server) serveObjectRoutes(w http.ResponseWriter, r *http.Request) bool {
	var allow []string
	var matched *objectRoute
	for i := range s.objectRoutes {
		o := &s.objectRoutes[i]
		id, ok := matchObject(o.prefix, o.suffix, r.URL.Path)
		if !ok {
			continue
		}
		if r.Method == o.Method {
			s.serveObject(w, r, o, id)
			return true
		}
		matched = o
		allow = append(allow, o.Method)
	}
	if matched == nil {
		return false
	}
	start := s.now()
	id := s.newRequestID()
	w.Header().Set("X-Request-Id", id)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	se := apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest,
		fmt.Sprintf("use %s %s", strings.Join(allow, " or "), r.URL.Path))
	s.refuse(w, matched.f, &recorder.Refusal{RequestID: id, Format: matched.f.Name(), Route: r.Method + " " + r.URL.Path, Start: start, Err: se})
	return true
}

// serveObject relays a request on a stored object to the provider that
// keeps it, with the provider's credential, when the caller owns it.
func (s *Server) serveObject(w http.ResponseWriter, r *http.Request, o *objectRoute, id string) {
	start := s.now()
	reqID := s.newRequestID()
	w.Header().Set("X-Request-Id", reqID)
	route := r.Method + " " + r.URL.Path
	reject := func(a *agentctx.Agent, se *apierror.Error) {
		s.refuse(w, o.f, &recorder.Refusal{RequestID: reqID, Format: o.f.Name(), Route: route, Agent: a, Start: start, Err: se})
	}
	agent, err := s.caller(r)
	if err != nil {
		reject(nil, asStatus(err))
		return
	}
	if !s.admit.enter(r.Context(), agent.ID) {
		reject(agent, s.agentBusy(agent.ID))
		return
	}
	defer s.admit.leave(agent.ID)
	// These routes take no body, but a body sent is relayed as it came
	// (the Go SDK streams a stored response with a GET whose JSON body
	// holds "stream": true), once checked to be JSON.
	body, pb, release, err := s.readBody(w, r, agent.ID, s.modelBodies())
	if err != nil {
		reject(agent, asStatus(err))
		return
	}
	pb.disown() // relayed without holders: left to the collector
	defer release()
	if len(bytes.TrimSpace(body)) == 0 {
		body = nil
	} else if !jsontop.Valid(body) {
		reject(agent, asStatus(badRequest("request body is not valid JSON")))
		return
	}
	owner, ok := s.owners.Owner(id)
	if !ok || owner.Agent != agent.ID {
		reject(agent, apierror.New(http.StatusNotFound, apierror.TypeNotFound, fmt.Sprintf("%s %s not found", o.noun, quoteForMessage(id))))
		return
	}
	rt := s.providers.get(start).routes[owner.Provider]
	if rt == nil {
		reject(agent, apierror.New(http.StatusBadGateway, apierror.TypeUpstream,
			fmt.Sprintf("%s %s is stored by provider %s, which is no longer configured", o.noun, quoteForMessage(id), owner.Provider)))
		return
	}
	x := &exchange.Exchange{ID: reqID, Start: start, Agent: agent, Pod: s.cfg.Pod, Format: exchange.Format(o.f.Name()), Provider: rt.Name}
	withRoute := func(fill func(*audit.Event)) func(*audit.Event) {
		return func(e *audit.Event) {
			e.Route = route
			if fill != nil {
				fill(e)
			}
		}
	}
	s.auditExchange(x, audit.TypeRequest, withRoute(nil))
	call := &upstreamCall{route: rt, method: r.Method, url: rt.URL(upstreamObjectPath(o.Upstream, id)), header: r.Header, rawQuery: r.URL.RawQuery}
	resp, err := s.send(r.Context(), call, oneSlice(body))
	if err != nil {
		se := s.upstreamError(r, x, err)
		if se == nil {
			s.auditExchange(x, audit.TypeError, withRoute(clientClosed))
			return
		}
		s.auditExchange(x, audit.TypeError, withRoute(func(e *audit.Event) { e.StatusCode, e.Error = se.Status, se.Message }))
		se.Write(w, o.f)
		return
	}
	defer resp.Body.Close()
	if r.Method == http.MethodDelete && resp.StatusCode/100 == 2 {
		if err := s.owners.Forget(id); err != nil {
			s.auditExchange(x, audit.TypeError, withRoute(func(e *audit.Event) { e.Error = err.Error() }))
		}
	}
	copyResponseHeaders(w.Header(), resp.Header)
	if resp.ContentLength >= 0 && resp.ContentLength <= maxCaptureBytes {
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)
	err = copyBounded(w, resp.Body, isEventStream(resp.Header.Get("Content-Type")))
	switch {
	case err == nil:
		s.auditExchange(x, audit.TypeResponse, withRoute(func(e *audit.Event) { e.StatusCode = resp.StatusCode }))
	case errors.Is(err, errClientGone) || r.Context().Err() != nil:
		s.auditExchange(x, audit.TypeError, withRoute(clientClosed))
	default:
		s.auditExchange(x, audit.TypeError, withRoute(func(e *audit.Event) {
			e.StatusCode, e.Error = resp.StatusCode, fmt.Sprintf("provider %s: relaying the answer: %v", rt.Name, err)
		}))
		// The status is sent; aborting is the only way to tell the
		// runner the body is incomplete.
		panic(http.ErrAbortHandler)
	}
}

func clientClosed(e *audit.Event) {
	e.StatusCode, e.Error = StatusClientClosed, "client disconnected; upstream request cancelled"
}

// errAnswerTooLarge ends a relay of more than maxCaptureBytes.
var errAnswerTooLarge = fmt.Errorf("the answer is larger than %d bytes", maxCaptureBytes)

// copyBounded copies an upstream body of at most maxCaptureBytes to w,
// flushing each chunk when it is an event stream.
func copyBounded(w http.ResponseWriter, body io.Reader, flush bool) error {
	bp := copyPool.Get().(*[]byte)
	defer copyPool.Put(bp)
	rc := http.NewResponseController(w)
	var total int64
	for {
		n, rerr := body.Read(*bp)
		if n > 0 {
			if total += int64(n); total > maxCaptureBytes {
				return errAnswerTooLarge
			}
			if _, err := w.Write((*bp)[:n]); err != nil {
				return errClientGone
			}
			if flush {
				if err := rc.Flush(); err != nil {
					return errClientGone
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// checkContinues refuses a generation that continues from a stored object
// the agent does not own, or that the routed provider does not keep; it
// returns the object's id and owner ("" when the request continues none).
func (s *Server) checkContinues(st *storedFormat, body []byte, agent *agentctx.Agent, route *Route) (string, owners.Owner, error) {
	// The edge refused a body with the member repeated or spelled in
	// another case (scanRequest): the provider continues from the object
	// checked here.
	prev := st.Continues(body)
	if prev == "" {
		return "", owners.Owner{}, nil
	}
	q := quoteForMessage(prev)
	o, ok := s.owners.Owner(prev)
	if !ok || o.Agent != agent.ID {
		return "", owners.Owner{}, badRequest(fmt.Sprintf("%s %s is not a %s of this agent", st.ContinuesMember(), q, st.noun))
	}
	if o.Provider != route.Name {
		return "", owners.Owner{}, badRequest(fmt.Sprintf("%s %s is stored by provider %s, but this request is routed to provider %s: a %s can only be continued at the provider that stores it (name a model of %s)",
			st.ContinuesMember(), q, o.Provider, route.Name, st.noun, o.Provider))
	}
	return prev, o, nil
}

// recordCreated makes x's agent, at x's provider, the owner of the stored
// object id (exchange.Exchange.Created), in conversation (the key of x's
// conversation, for per-conversation budgets; "" when none was needed).
func (s *Server) recordCreated(x *exchange.Exchange, id, conversation string) {
	if err := s.owners.Record(id, owners.Owner{Agent: x.Agent.ID, Provider: x.Provider, Conversation: conversation}); err != nil {
		s.auditExchange(x, audit.TypeError, func(e *audit.Event) {
			e.Error = fmt.Sprintf("recording the owner of stored object %s: %v", quoteForMessage(id), err)
		})
	}
}
