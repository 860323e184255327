package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/tracing"
)

// Timeout causes, reported through context.Cause and returned by Send and by
// reads of the response body.
var (
	ErrFirstByteTimeout = errors.New("upstream sent no response headers within the first-byte timeout")
	ErrIdleTimeout      = errors.New("upstream body was silent for longer than the idle timeout")
)

var jsonContentType = []string{"application/json"}

// upstreamCall is what one upstream call needs besides the body.
type upstreamCall struct {
	route *Route
	fi    int       // the format's index (Server.formats)
	reg   *registry // the registry the route came from: its fallbacks
	// urlOf is the URL of the call's endpoint on another route (a
	// fallback target).
	urlOf    func(*Route) string
	method   string // "" is POST
	url      string
	header   http.Header // the runner's headers; filtered here
	rawQuery string
	// hold, when set, is the pooled buffer the body's slices may refer
	// to: each reader the transport gets holds it until closed.
	hold *pooledBody
}

// send performs one upstream call, a POST of body unless c names another
// method (body is then nil: no body and no Content-Type). The body is
// given as slices sent one after the other, so a body that differs from
// the runner's in one value (the model) is sent without a copy. Its context is the request's (a runner
// that disconnects cancels the call) plus two bounds: response headers must
// arrive within FirstByteTimeout, and then the body may not be silent for
// longer than StreamIdleTimeout between reads. Closing the returned body
// releases everything.
func (s *Server) send(ctx context.Context, c *upstreamCall, body [][]byte) (*http.Response, error) {
	return s.sendKey(ctx, c, c.url, body, c.route.Auth, c.route.authValue)
}

// sendKey is send to url, authenticated as auth says with the header
// value key (nil: none).
func (s *Server) sendKey(ctx context.Context, c *upstreamCall, url string, body [][]byte, auth string, key []string) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	u := url
	if c.rawQuery != "" {
		u += "?" + c.rawQuery
	}
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("cllama: upstream request: %w", err)
	}
	if body != nil {
		setBody(req, body, c.hold)
	}
	copyRequestHeaders(req.Header, c.header, s.forward)
	tracing.Inject(ctx, req.Header) // the provider joins the agent's trace
	if body != nil {
		// The body was checked to be JSON, whatever the runner labelled
		// it (curl -d sends a form type, which providers reject).
		// Shared, never-mutated header values: no allocation per request.
		req.Header["Content-Type"] = jsonContentType
	}
	if key != nil {
		switch auth {
		case manifest.ProviderAuthBearer:
			req.Header["Authorization"] = key
		case manifest.ProviderAuthXAPIKey:
			req.Header["X-Api-Key"] = key
		}
	}

	timer := time.AfterFunc(s.cfg.FirstByteTimeout, func() { cancel(ErrFirstByteTimeout) })
	resp, err := s.transport.RoundTrip(req)
	timer.Stop()
	if err != nil {
		cause := context.Cause(ctx)
		cancel(nil)
		if errors.Is(cause, ErrFirstByteTimeout) {
			return nil, ErrFirstByteTimeout
		}
		return nil, err
	}
	ib := &idleBody{rc: resp.Body, ctx: ctx, cancel: cancel, idle: s.cfg.StreamIdleTimeout}
	ib.timer = time.AfterFunc(ib.idle, func() { cancel(ErrIdleTimeout) })
	resp.Body = ib
	return resp, nil
}

// oneSlice is a body of one slice; nil stays nil (no body).
func oneSlice(b []byte) [][]byte {
	if b == nil {
		return nil
	}
	return [][]byte{b}
}

// joinBelow is the size up to which a body of several slices is sent as
// one: copying it costs less than the write of its own the transport gives
// the headers of a body it cannot tell is in memory.
const joinBelow = 64 << 10

// setBody gives req the body made of parts, with its length, and a
// GetBody so the transport can resend it on a connection that turns out
// to be dead. With hold set, every reader made holds it until closed.
func setBody(req *http.Request, parts [][]byte, hold *pooledBody) {
	var n int64
	for _, p := range parts {
		n += int64(len(p))
	}
	if len(parts) > 1 && n <= joinBelow {
		// One slice: the transport then knows the body is in memory
		// and writes it with the headers, in one write rather than two.
		parts, hold = [][]byte{slices.Concat(parts...)}, nil
	}
	open := func() io.ReadCloser {
		var r io.Reader
		if len(parts) == 1 {
			r = bytes.NewReader(parts[0])
		} else {
			bufs := make(net.Buffers, len(parts))
			copy(bufs, parts)
			r = &bufs
		}
		if hold != nil {
			return newHeldReader(r, hold)
		}
		return io.NopCloser(r)
	}
	req.ContentLength = n
	if n == 0 {
		req.Body, req.GetBody = http.NoBody, func() (io.ReadCloser, error) { return http.NoBody, nil }
		return
	}
	req.Body = open()
	req.GetBody = func() (io.ReadCloser, error) { return open(), nil }
}

// idleBody bounds the silence between reads of an upstream body and
// translates the resulting cancellation into ErrIdleTimeout.
type idleBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	timer  *time.Timer
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == nil || n > 0 {
		b.timer.Reset(b.idle)
	}
	if err != nil && err != io.EOF {
		if cause := context.Cause(b.ctx); errors.Is(cause, ErrIdleTimeout) {
			return n, ErrIdleTimeout
		}
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}
