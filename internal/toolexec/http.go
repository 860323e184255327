package toolexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// A body longer than MaxResponseBytes is read on and discarded, to learn
// its true size for original_bytes, up to drainFactor times that bound and
// for at most drainTimeout. When the drain stops short of the end, the
// envelope says original_bytes_at_least instead: it never states a size
// it did not count (or that Content-Length did not declare).
const (
	drainFactor  = 16
	drainTimeout = 2 * time.Second
)

// errDrainStopped cancels a drain that ran out of time.
var errDrainStopped = errors.New("drain stopped at its time bound")

// httpRequest is a call rendered once, before any attempt: retries resend
// exactly these bytes.
type httpRequest struct {
	method string
	url    string
	body   []byte // nil for GET and DELETE
}

// prepareHTTP renders the request (spec 000 "Path placeholders"): {param}
// placeholders are filled from the arguments as single escaped segments,
// {claw_id} from the agent id; GET and DELETE send what is left as the
// query, other methods as a JSON body (wrapped under body_key when set).
func (e *Executor) prepareHTTP(c Call, args map[string]any) (httpRequest, error) {
	exec := &c.Tool.Execution
	method := strings.ToUpper(exec.Method)
	if method == "" {
		method = http.MethodGet
	}
	base, err := url.Parse(exec.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return httpRequest{}, fmt.Errorf("tool %s has an invalid base_url", c.Tool.Name)
	}
	tmpl := parsePathTemplate(exec.Path)
	path, err := tmpl.fill(args, c.AgentID)
	if err != nil {
		return httpRequest{}, err
	}
	req := httpRequest{method: method, url: strings.TrimRight(exec.BaseURL, "/") + path}
	switch method {
	case http.MethodGet, http.MethodDelete, http.MethodHead:
		q, err := encodeQuery(args, tmpl.query)
		if err != nil {
			return httpRequest{}, err
		}
		if q != "" {
			req.url += "?" + q
		}
	default:
		if tmpl.query != "" {
			req.url += "?" + tmpl.query
		}
		req.body, err = encodeBody(args, exec.BodyKey)
		if err != nil {
			return httpRequest{}, argErrorf("arguments cannot be encoded: %v", err)
		}
	}
	return req, nil
}

// doHTTP makes one attempt.
func (e *Executor) doHTTP(ctx context.Context, r httpRequest, c Call, auth *manifest.Auth) (result, *failure) {
	svc := c.Tool.Execution.Service
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	// reqCtx lets a drain of an over-long body be stopped on its own.
	reqCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	req, err := http.NewRequestWithContext(reqCtx, r.method, r.url, body)
	if err != nil {
		return result{}, &failure{code: CodeMisconfigured, message: fmt.Sprintf("tool %s cannot build its request", c.Tool.Name)}
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/plain;q=0.9, */*;q=0.8")
	req.Header.Set("User-Agent", e.opts.UserAgent)
	req.Header.Set("X-Claw-ID", c.AgentID)
	applyAuth(req.Header, auth)

	resp, err := e.client.Do(req)
	if err != nil {
		return result{}, &failure{code: CodeUnavailable, message: fmt.Sprintf("cannot reach service %s: %s", svc, netReason(err)), transient: true}
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Only a snippet is quoted, so only a little is read.
		head, _ := io.ReadAll(io.LimitReader(resp.Body, int64(4*e.opts.ErrorSnippetBytes)))
		msg := fmt.Sprintf("service %s answered %s", svc, statusText(resp.StatusCode))
		// Credentials and addresses go before the cut: a secret that
		// straddles it would otherwise leak its first bytes.
		sc := newScrubber(&c.Tool.Execution, auth)
		if s := snippet(sc.scrub(string(head)), e.opts.ErrorSnippetBytes); s != "" && utf8.ValidString(s) {
			msg += ": " + s
		}
		transient := resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout
		return result{}, &failure{code: CodeServiceError, message: msg, transient: transient}
	}

	// A call whose result is kept whole beyond its cap (internal/toolcall)
	// is bounded by its MaxResultBytes, which may exceed the default.
	limit := max(e.opts.MaxResponseBytes, int64(c.MaxResultBytes))
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return result{}, &failure{code: CodeUnavailable, message: fmt.Sprintf("service %s broke off its answer: %s", svc, netReason(err)), transient: true}
	}
	if int64(len(data)) > limit {
		// Too long to hold: keep the first bytes, learn the size by
		// reading on (bounded), and report it truncated.
		read := int64(len(data))
		data = data[:limit]
		// Do not leave half a rune at the cut.
		for j := len(data) - 1; j >= 0 && j >= len(data)-utf8.UTFMax; j-- {
			if utf8.RuneStart(data[j]) {
				if !utf8.FullRune(data[j:]) {
					data = data[:j]
				}
				break
			}
		}
		size, exact := drain(reqCtx, stop, resp.Body, read, resp.ContentLength, limit*drainFactor)
		return result{text: string(data), isText: true, cut: true, fullSize: int(size), sizeAtLeast: !exact}, nil
	}
	return decodeAnswer(data, resp.Header.Get("Content-Type")), nil
}

// drain reads the rest of a body whose first read bytes were read, and
// returns the body's size: exact when the drain reached the end, or when
// the body declared its length (Content-Length, declared >= 0) and the
// drain was stopped by its own bounds; otherwise the bytes counted, as a
// lower bound. It reads at most maxBytes more, for at most drainTimeout
// (stopping the request's context when time runs out).
func drain(ctx context.Context, stop context.CancelCauseFunc, body io.Reader, read, declared, maxBytes int64) (size int64, exact bool) {
	if declared >= 0 && declared-read > maxBytes {
		// Declared too long to drain: the framing is the size.
		return declared, true
	}
	t := time.AfterFunc(drainTimeout, func() { stop(errDrainStopped) })
	defer t.Stop()
	rest, err := io.Copy(io.Discard, io.LimitReader(body, maxBytes+1))
	size = read + rest
	switch {
	case err == nil && rest <= maxBytes:
		return size, true // the end of the body
	case declared >= size && (err == nil || errors.Is(context.Cause(ctx), errDrainStopped)):
		return declared, true // stopped by our bounds, not by the service
	}
	return size, false
}

// decodeAnswer turns a complete 2xx body into a result: JSON stays JSON
// (compacted); text is text; an empty body is null. Binary content (not
// UTF-8) is described rather than sent as mojibake.
func decodeAnswer(data []byte, contentType string) result {
	if len(bytes.TrimSpace(data)) == 0 {
		return result{json: jsonNull}
	}
	if jsonish(contentType, data) {
		if canon, ok := jsontop.Canonical(data); ok {
			return result{json: canon}
		}
	}
	if !utf8.Valid(data) {
		mt, _, _ := mime.ParseMediaType(contentType)
		if mt == "" {
			mt = "unknown type"
		}
		return result{text: fmt.Sprintf("[%d bytes of binary content (%s) not shown]", len(data), mt), isText: true}
	}
	return result{text: string(data), isText: true}
}

// jsonish reports whether a body should be read as JSON: its media type is
// JSON (application/json, */*+json), or it has none and looks like JSON.
func jsonish(contentType string, data []byte) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if contentType == "" || err != nil {
		t := bytes.TrimSpace(data)
		return len(t) > 0 && (t[0] == '{' || t[0] == '[')
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// applyAuth sets the credential: a bearer token as Authorization (the
// only type tools.json carries; "none" sends nothing).
func applyAuth(h http.Header, auth *manifest.Auth) {
	if auth == nil || auth.Token == "" {
		return
	}
	if strings.EqualFold(auth.Type, "bearer") {
		h.Set("Authorization", "Bearer "+auth.Token)
	}
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprintf("%d", code)
}
