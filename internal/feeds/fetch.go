package feeds

import (
	"github.com/clawdapus/clawgo/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// errStatus is a non-2xx feed response.
type errStatus struct{ code int }

func (e errStatus) Error() string { return fmt.Sprintf("feed service answered HTTP %d", e.code) }

// acceptFeed states what a feed may be (spec 003: text, markdown or JSON).
const acceptFeed = "text/markdown, text/plain, application/json;q=0.9, */*;q=0.1"

// get performs the GET of one feed with the caller-identity headers of spec
// 003 §5 (X-Claw-ID, X-Claw-Pod) and the feed's bearer: feed.Auth from
// feeds.json, else the agent's service-auth projection for feed.Source. It
// reads at most maxBody bytes of a 2xx body; limited reports that there was
// more. Any other status is an error.
func (d *Decorator) get(ctx context.Context, x *exchange.Exchange, f *manifest.Feed) (body []byte, ctype string, limited bool, status int, err error) {
	ctx, span := tracing.Start(ctx, "feed "+f.Name, trace.SpanKindClient, attribute.String("claw.agent", x.Agent.ID),
		attribute.String("claw.feed", f.Name), attribute.String("claw.service", f.Source))
	defer func() {
		if status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		if err != nil {
			span.SetStatus(codes.Error, "feed fetch failed")
		}
		span.End()
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.FetchURL(), nil)
	if err != nil {
		return nil, "", false, 0, err
	}
	tracing.Inject(ctx, req.Header)
	req.Header.Set("Accept", acceptFeed)
	req.Header.Set("User-Agent", "cllama-feeds")
	req.Header.Set("X-Claw-ID", x.Agent.ID)
	if x.Pod != "" {
		req.Header.Set("X-Claw-Pod", x.Pod)
	}
	if tok := bearerFor(x, f); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, "", false, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, "", false, resp.StatusCode, errStatus{resp.StatusCode}
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, d.maxBody+1))
	if err != nil {
		return nil, "", false, resp.StatusCode, fmt.Errorf("reading feed body: %w", err)
	}
	if int64(len(body)) > d.maxBody {
		body, limited = body[:d.maxBody], true
	}
	return body, resp.Header.Get("Content-Type"), limited, resp.StatusCode, nil
}

func bearerFor(x *exchange.Exchange, f *manifest.Feed) string {
	if f.Auth != "" {
		return f.Auth
	}
	if b := x.Agent.ServiceAuth[f.Source].Bearer(); b != nil {
		return b.Token
	}
	return ""
}

// withoutBearer removes the feed's own bearer from its body: the projected
// credential is one the agent never sees, even from a service that echoes
// its request into the feed. It is looked for as sent and as a JSON string
// writes it.
func withoutBearer(body []byte, tok string) []byte {
	if len(tok) < 4 {
		return body
	}
	forms := [][]byte{[]byte(tok)}
	if q, err := json.Marshal(tok); err == nil && string(q[1:len(q)-1]) != tok {
		forms = append(forms, q[1:len(q)-1])
	}
	for _, f := range forms {
		if bytes.Contains(body, f) {
			body = bytes.ReplaceAll(body, f, []byte("[redacted]"))
		}
	}
	return body
}

// failureReason says, for the model, why a fetch failed, without the URL or
// the transport's wording (those go to the audit log).
func failureReason(err error, status int, timeout time.Duration) string {
	var ne net.Error
	var se errStatus
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("the feed service answered HTTP %d", se.code)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("the feed service did not answer within %s", timeout)
	case status != 0:
		return "the feed response was cut off"
	default:
		return "the feed service could not be reached"
	}
}
