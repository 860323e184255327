// Package alerts sends the events an operator must hear about (an
// approval waiting, a budget reached, a provider key cooling down) to the
// pod's webhook, x-claw.alerts. Each event is one JSON object POSTed on
// its own, {"event": type, "time": RFC 3339, "pod": name, …fields},
// signed with X-Claw-Signature: sha256=<hex HMAC-SHA256 of the body>.
//
// Sending never blocks a request and never fails one: events wait in a
// bounded queue (the oldest is dropped, and counted, when it is full)
// and are retried with backoff while the receiver fails. Events carry no
// secret: callers pass identifiers (an agent, a key's id), never a
// credential, and the webhook's own secret only signs.
package alerts

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// Sink takes events. Alert queues one and returns at once; it never
// fails the caller. fields must not carry a secret; "event", "time" and
// "pod" are set by the sink.
type Sink interface {
	Alert(event string, fields map[string]any)
}

// Discard is the Sink of a pod without a webhook.
var Discard Sink = discard{}

type discard struct{}

func (discard) Alert(string, map[string]any) {}

// SignatureHeader carries the body's signature.
const SignatureHeader = "X-Claw-Signature"

// Sign returns the X-Claw-Signature value of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is body's signature under secret, comparing
// in constant time: what a receiver runs.
func Verify(secret string, body []byte, sig string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(sig))
}

// Defaults of a Webhook.
const (
	// DefaultQueue bounds the events waiting to be sent.
	DefaultQueue = 1024
	// DefaultAttempts is how many times one event is tried.
	DefaultAttempts = 6
	// DefaultTimeout bounds one POST.
	DefaultTimeout = 10 * time.Second
	// maxBackoff bounds the wait between two attempts.
	maxBackoff = 30 * time.Second
)

// Webhook is a Sink that POSTs to the pod's webhook from one goroutine.
type Webhook struct {
	url, secret, pod string
	client           *http.Client
	attempts         int
	backoff          time.Duration
	log              *slog.Logger
	now              func() time.Time

	mu      sync.Mutex
	queue   []queued
	max     int
	dropped int
	seq     uint64
	wake    chan struct{}
	done    chan struct{}
	stop    context.CancelFunc
	ctx     context.Context
}

type queued struct {
	seq  uint64
	body []byte
	kind string
}

// Options tunes a Webhook; the zero value takes the defaults.
type Options struct {
	Client   *http.Client
	Queue    int
	Attempts int
	// Backoff is the first wait between attempts, doubled each time
	// (default 1s).
	Backoff time.Duration
	Log     *slog.Logger
	Now     func() time.Time
}

// New returns the Sink for cfg: Discard when cfg is nil, else a started
// Webhook (Close stops it).
func New(cfg *manifest.Alerts, pod string, opts Options) Sink {
	if cfg == nil {
		return Discard
	}
	return NewWebhook(cfg, pod, opts)
}

// NewWebhook starts a Webhook sending to cfg.
func NewWebhook(cfg *manifest.Alerts, pod string, opts Options) *Webhook {
	w := &Webhook{url: cfg.Webhook, secret: cfg.Secret, pod: pod, client: opts.Client, attempts: opts.Attempts,
		backoff: opts.Backoff, log: opts.Log, now: opts.Now, max: opts.Queue,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if w.client == nil {
		// Redirects are not followed: the signature was made for this URL.
		w.client = &http.Client{Timeout: DefaultTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if w.attempts <= 0 {
		w.attempts = DefaultAttempts
	}
	if w.backoff <= 0 {
		w.backoff = time.Second
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	if w.now == nil {
		w.now = time.Now
	}
	if w.max <= 0 {
		w.max = DefaultQueue
	}
	w.ctx, w.stop = context.WithCancel(context.Background())
	go w.run()
	return w
}

// Alert queues one event.
func (w *Webhook) Alert(event string, fields map[string]any) {
	obj := make(map[string]any, len(fields)+3)
	for k, v := range fields {
		obj[k] = v
	}
	obj["event"], obj["time"], obj["pod"] = event, w.now().UTC().Format(time.RFC3339), w.pod
	body, err := json.Marshal(obj)
	if err != nil {
		w.log.Error("alert not sent: its fields do not encode as JSON", "event", event, "err", err)
		return
	}
	w.mu.Lock()
	if len(w.queue) >= w.max {
		w.queue = w.queue[1:]
		w.dropped++
	}
	w.seq++
	w.queue = append(w.queue, queued{seq: w.seq, body: body, kind: event})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Dropped is how many events the full queue dropped so far.
func (w *Webhook) Dropped() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Close stops sending; events still queued are dropped. It waits for the
// sender to stop.
func (w *Webhook) Close() {
	w.stop()
	<-w.done
}

// Flush waits until the queue is empty (every event sent or given up on)
// or ctx ends: for a clean shutdown and for tests.
func (w *Webhook) Flush(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		w.mu.Lock()
		n := len(w.queue)
		w.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (w *Webhook) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		var next *queued
		if len(w.queue) > 0 {
			q := w.queue[0]
			next = &q
		}
		w.mu.Unlock()
		if next == nil {
			select {
			case <-w.ctx.Done():
				return
			case <-w.wake:
				continue
			}
		}
		w.deliver(*next)
		w.mu.Lock()
		// The event stays queued while it is sent (Flush waits for it);
		// a full queue may have dropped it meanwhile.
		if len(w.queue) > 0 && w.queue[0].seq == next.seq {
			w.queue = w.queue[1:]
		}
		w.mu.Unlock()
		if w.ctx.Err() != nil {
			return
		}
	}
}

// deliver sends one event, retrying with backoff on failure.
func (w *Webhook) deliver(q queued) {
	wait := w.backoff
	for attempt := 1; ; attempt++ {
		err := w.post(q.body)
		if err == nil {
			return
		}
		if attempt >= w.attempts {
			w.log.Warn("alert not delivered; giving up", "event", q.kind, "attempts", attempt, "err", err)
			return
		}
		select {
		case <-w.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, maxBackoff)
	}
}

func (w *Webhook) post(body []byte) error {
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cllama-alerts")
	req.Header.Set(SignatureHeader, Sign(w.secret, body))
	resp, err := w.client.Do(req)
	if err != nil {
		// The error quotes the URL; the webhook's URL is the operator's
		// and carries no user information (ParsePod refuses it).
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return nil
}
