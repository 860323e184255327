package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/keypool"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// Why a call went to the next target of its fallback chain (the reason
// label of cllama_fallbacks_total and the audit event's fallback_reason).
const (
	ReasonRateLimited = "rate_limited"     // every key cooling down
	ReasonKeysDead    = "keys_dead"        // every key refused by the provider
	ReasonServerError = "server_error"     // 5xx
	ReasonOverloaded  = "overloaded"       // 503, 529
	ReasonConnection  = "connection_error" // the provider could not be reached
	ReasonTimeout     = "timeout"          // the first-byte timeout
	ReasonCircuitOpen = "circuit_open"     // the provider's circuit is open
)

// maxKeptErrorBytes bounds the body of a provider's error kept while
// another key or target is tried (the runner gets it if none answers).
const maxKeptErrorBytes = 64 << 10

// attempt is the outcome of sending a call to one target.
type attempt struct {
	resp *http.Response
	err  error
	// why is "" when the provider answered (resp), else why the chain
	// may go on: resp is then the provider's last answer or nil, err the
	// call's error or nil.
	why string
	// wait is, when the pool sent nothing, how long until it may.
	wait time.Duration
}

// sendChain is the one place a model call reaches a provider: with a key
// of its provider's pool (sendPool), and, when the provider cannot
// answer, to each target of the fallback chain of "<provider>/<model>" in
// turn, the body's model rewritten. Nothing has reached the runner
// before it returns, so nothing is sent twice. It notes on x which
// provider and model answered and, after a fallback, the model first
// asked and why.
func (s *Server) sendChain(ctx context.Context, x *exchange.Exchange, call *upstreamCall, model string, body [][]byte) (*http.Response, error) {
	at := call.route
	a := s.sendPool(ctx, call, at, call.url, body)
	s.answered(x, at, model, "", "")
	if a.why == "" || call.reg == nil || len(call.reg.fallbacks) == 0 {
		return s.noAnswer(call, at, a)
	}
	first := at.Name + "/" + model
	from := first
	for _, t := range call.reg.fallbacks[first] {
		if ctx.Err() != nil {
			break
		}
		if !t.route.speaks[call.fi] {
			continue
		}
		rewritten, err := withModel(body, t.model)
		if err != nil {
			break
		}
		status := 0
		if a.resp != nil {
			status = a.resp.StatusCode
			discard(a.resp)
		}
		s.noteFallback(x, from, t.ref, a.why, status)
		why := a.why
		at = t.route
		a = s.sendPool(ctx, call, at, call.urlOf(at), rewritten)
		s.answered(x, at, t.model, first, why)
		if a.why == "" {
			return a.resp, a.err
		}
		from = t.ref
	}
	return s.noAnswer(call, at, a)
}

// answered notes on x the provider and model that answered (or were
// tried last) and, after a fallback, the model first asked and why.
func (s *Server) answered(x *exchange.Exchange, rt *Route, model, from, why string) {
	if x.Provider != rt.Name {
		x.Provider = rt.Name
	}
	if x.UpstreamModel != model {
		x.UpstreamModel = model
	}
	if x.FallbackFrom != from || x.FallbackReason != why {
		x.FallbackFrom, x.FallbackReason = from, why
	}
	if from != "" {
		// The call is costed at the price of the model that answered.
		x.Spend.Reprice(rt.Name + "/" + model)
	}
}

// noteFallback records one step of a chain: an audit event (which the
// metrics count) naming both models and why.
func (s *Server) noteFallback(x *exchange.Exchange, from, to, why string, status int) {
	s.auditExchange(x, audit.TypeFallback, func(e *audit.Event) {
		e.Model, e.FallbackFrom, e.FallbackReason, e.StatusCode = to, from, why, status
	})
}

// noAnswer is what the runner gets when no target answered: the last
// provider's own answer, its error, or one cllama makes when it sent
// nothing (every key dead or cooling, the circuit open).
func (s *Server) noAnswer(call *upstreamCall, rt *Route, a attempt) (*http.Response, error) {
	if a.resp != nil || a.err != nil {
		return a.resp, a.err
	}
	f := s.formats[call.fi]
	switch a.why {
	case ReasonKeysDead:
		return madeResponse(f.ErrorBody(apierror.TypeUpstream,
			fmt.Sprintf("every key of provider %s was refused by the provider; the operator must replace them (providers.json)", rt.Name)), http.StatusBadGateway, 0), nil
	case ReasonRateLimited:
		return madeResponse(f.ErrorBody(apierror.TypeRateLimit,
			fmt.Sprintf("every key of provider %s is rate limited", rt.Name)), http.StatusTooManyRequests, a.wait), nil
	}
	return madeResponse(f.ErrorBody(apierror.TypeOverloaded,
		fmt.Sprintf("provider %s is failing: its circuit is open (CLLAMA_CIRCUIT_OPEN) and no fallback answered", rt.Name)), http.StatusServiceUnavailable, a.wait), nil
}

// madeResponse is a response cllama makes itself, with a Retry-After of
// wait rounded up to a second when wait > 0.
func madeResponse(body []byte, status int, wait time.Duration) *http.Response {
	h := http.Header{"Content-Type": {"application/json"}}
	if wait > 0 {
		h["Retry-After"] = []string{retryAfterValue(wait)}
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
}

func retryAfterValue(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// sendPool sends body to rt at url with a key of its pool, and again at
// once with another key when the provider limited the key (429, its
// overloaded status 529: the key cools down) or refused it (401: the key
// is dead).
func (s *Server) sendPool(ctx context.Context, call *upstreamCall, rt *Route, url string, body [][]byte) attempt {
	pool := rt.pool
	if pool == nil {
		resp, err := s.sendKey(ctx, call, url, body, rt.Auth, rt.authValue)
		return attempt{resp: resp, err: err, why: classify(ctx, resp, err)}
	}
	var tried uint64
	var kept *http.Response
	for {
		pick := pool.Pick(tried)
		switch pick.Status {
		case keypool.Cooling:
			if kept != nil && (kept.StatusCode == http.StatusTooManyRequests || kept.StatusCode == 529) {
				kept.Header["Retry-After"] = []string{retryAfterValue(pick.Wait)}
			}
			return attempt{resp: kept, why: ReasonRateLimited, wait: pick.Wait}
		case keypool.Dead:
			return attempt{resp: kept, why: ReasonKeysDead}
		case keypool.CircuitOpen:
			discard(kept)
			return attempt{why: ReasonCircuitOpen, wait: pick.Wait}
		}
		if pick.Key >= 0 {
			tried |= 1 << pick.Key
		}
		resp, err := s.sendKey(ctx, call, url, body, rt.Auth, rt.keyAuth(pick.Key))
		if err != nil {
			discard(kept)
			why := classify(ctx, nil, err)
			if why == "" {
				pool.Done(pick, keypool.Abandoned, 0, false)
			} else {
				pool.Done(pick, keypool.Failed, 0, false)
			}
			return attempt{err: err, why: why}
		}
		switch st := resp.StatusCode; {
		case st == http.StatusTooManyRequests || st == 529:
			d, ok := keypool.ParseRetryAfter(resp.Header.Get("Retry-After"), s.now())
			pool.Done(pick, keypool.Limited, d, ok)
			discard(kept)
			kept = keep(resp)
		case st == http.StatusUnauthorized:
			pool.Done(pick, keypool.Invalid, 0, false)
			discard(kept)
			kept = keep(resp)
		default:
			discard(kept)
			why := classify(ctx, resp, nil)
			if why == "" {
				pool.Done(pick, keypool.OK, 0, false)
			} else {
				pool.Done(pick, keypool.Failed, 0, false)
			}
			return attempt{resp: resp, why: why}
		}
	}
}

// classify says why a call's outcome may go to a fallback ("" when it
// may not: an answer, or a runner that went away).
func classify(ctx context.Context, resp *http.Response, err error) string {
	if err != nil {
		switch {
		case errors.Is(err, ErrFirstByteTimeout):
			return ReasonTimeout
		case ctx.Err() != nil:
			return ""
		}
		return ReasonConnection
	}
	switch st := resp.StatusCode; {
	case st == http.StatusServiceUnavailable || st == 529:
		return ReasonOverloaded
	case st == http.StatusTooManyRequests:
		return ReasonRateLimited
	case st >= 500:
		return ReasonServerError
	}
	return ""
}

// keep reads a provider's error answer (bounded) so that another key or
// target can be tried and the runner still get it if none answers.
func keep(resp *http.Response) *http.Response {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxKeptErrorBytes))
	resp.Body.Close()
	return &http.Response{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b))}
}

func discard(resp *http.Response) {
	if resp != nil {
		resp.Body.Close()
	}
}

// withModel is body (as slices) with its top-level "model" value
// replaced by model: the request a fallback target gets.
func withModel(body [][]byte, model string) ([][]byte, error) {
	b := body[0]
	if len(body) > 1 {
		b = bytes.Join(body, nil)
	}
	start, end := -1, -1
	jsontop.Walk(b, func(key []byte, s, e int) bool {
		if jsontop.KeyEquals(key, "model") {
			start, end = s, e
			return false
		}
		return true
	})
	if start < 0 {
		return nil, errors.New("the request has no model to rewrite")
	}
	return [][]byte{b[:start], jsontop.AppendString(nil, model), b[end:]}, nil
}
