package feeds

import (
	"context"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/recorder"
)

// Defaults for the zero Options.
const (
	DefaultTimeout        = 5 * time.Second
	DefaultFeedCap        = 16 << 10
	DefaultTotalCap       = 64 << 10
	DefaultMaxBodyBytes   = 1 << 20
	DefaultCacheEntries   = 1024
	DefaultConcurrency    = 8
	DefaultFailureBackoff = 5 * time.Second
)

// Options configure a Decorator. The zero value of every field means its
// default.
type Options struct {
	// Client performs feed fetches. Default: a client of its own with a
	// transport that ignores HTTP proxy settings (feeds are pod services)
	// and keeps idle connections to them.
	Client *http.Client
	// Timeout bounds one fetch, from dial to the last body byte. Default
	// DefaultTimeout (5s).
	Timeout time.Duration
	// FeedCap bounds the bytes of one feed's content as injected (after
	// frontmatter removal, including its json fence). Default
	// DefaultFeedCap (16 KiB).
	FeedCap int
	// TotalCap bounds the whole feed text injected into one request, frames
	// and annotations included. Every feed keeps at least its frame and a
	// note, so only frames that alone exceed it can exceed it. Default
	// DefaultTotalCap (64 KiB).
	TotalCap int
	// MaxBodyBytes bounds how much of a feed response is read; the rest is
	// discarded and the feed annotated as truncated. Default
	// DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// CacheEntries bounds the cache (one entry per agent and feed URL,
	// least recently used dropped first). Default DefaultCacheEntries.
	CacheEntries int
	// Concurrency bounds the fetches one request runs at once. Default
	// DefaultConcurrency (8).
	Concurrency int
	// FailureBackoff is how long after a failed fetch a feed is served from
	// what is cached (stale content or the placeholder) instead of fetched
	// again; never longer than the feed's TTL. Default
	// DefaultFailureBackoff (5s); negative disables.
	FailureBackoff time.Duration
	// Recorder receives feed_fetch and manifest_error events: cllama's one
	// recorder, which writes the audit log and feeds metrics and traces.
	// Nil records nothing.
	Recorder *recorder.Recorder
	// Now is the clock for TTLs, refreshed times and ages. Default
	// time.Now. Fetch latencies are always measured on the real clock.
	Now func() time.Time
}

// Decorator injects an agent's context feeds into its requests. It
// implements exchange.Decorator and is safe for concurrent use; one Decorator
// serves every agent of the proxy and owns the feed cache.
type Decorator struct {
	client      *http.Client
	timeout     time.Duration
	feedCap     int
	totalCap    int
	maxBody     int64
	concurrency int
	backoff     time.Duration
	rec         *recorder.Recorder
	now         func() time.Time

	cache   *cache
	flights singleflight.Group

	mu       sync.Mutex
	reported map[string]*agentctx.Agent // agent id -> snapshot whose FeedsErr was audited

	// beforeFlight, when set (tests), runs after a request found key stale
	// and before it joins or starts the fetch.
	beforeFlight func(key string)
}

var _ exchange.Decorator = (*Decorator)(nil)

// New returns a Decorator with opts applied over the defaults.
func New(opts Options) *Decorator {
	d := &Decorator{
		client:      opts.Client,
		timeout:     cmpOr(opts.Timeout, DefaultTimeout),
		feedCap:     cmpOr(opts.FeedCap, DefaultFeedCap),
		totalCap:    cmpOr(opts.TotalCap, DefaultTotalCap),
		maxBody:     cmpOr(opts.MaxBodyBytes, DefaultMaxBodyBytes),
		concurrency: cmpOr(opts.Concurrency, DefaultConcurrency),
		backoff:     opts.FailureBackoff,
		rec:         opts.Recorder,
		now:         opts.Now,
		cache:       newCache(cmpOr(opts.CacheEntries, DefaultCacheEntries)),
		reported:    make(map[string]*agentctx.Agent),
	}
	if d.client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.MaxIdleConnsPerHost = 16
		d.client = &http.Client{Transport: t}
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.backoff == 0 {
		d.backoff = DefaultFailureBackoff
	}
	return d
}

// cmpOr returns v when positive, else def.
func cmpOr[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Decorate injects x.Agent's feeds into x.Body (a new slice; the old one is
// not modified). It fetches what the cache cannot serve, waiting at most the
// per-fetch timeout, and never fails for a feed's sake: an error is returned
// only for a format that is not registered or cannot carry feeds. A body it cannot decorate is left as
// is.
func (d *Decorator) Decorate(ctx context.Context, x *exchange.Exchange) error {
	if x == nil || x.Agent == nil {
		return nil
	}
	inj, err := injectorFor(x.Format)
	if err != nil {
		return err
	}
	var text string
	switch a := x.Agent; {
	case a.FeedsErr != nil:
		d.reportManifestError(x)
		text = renderManifestError()
	case len(a.Feeds) == 0:
		return nil
	default:
		outs := d.collect(ctx, x)
		text = d.render(a.Feeds, outs)
		// What the model reads of each feed is also what tool policy
		// sees (internal/policy `feeds`): no second fetch.
		for i, o := range outs {
			if o.snap != nil {
				if x.Feeds == nil {
					x.Feeds = make(map[string]string, len(outs))
				}
				x.Feeds[a.Feeds[i].Name] = o.snap.content
			}
		}
	}
	if body, ok := inject(inj, x.Body, text, x.Checked); ok {
		x.Body = body
	}
	return nil
}

// Cached returns the agent's feeds as last fetched, by name, without
// fetching (a feed never fetched is absent): what tool policy sees of
// feeds outside a model request (native calls on /mcp).
func (d *Decorator) Cached(a *agentctx.Agent) map[string]string {
	if a == nil || len(a.Feeds) == 0 {
		return nil
	}
	out := map[string]string{}
	for i := range a.Feeds {
		f := &a.Feeds[i]
		if e, ok := d.cache.get(cacheKey(a.ID, f.FetchURL())); ok && e.good != nil {
			out[f.Name] = e.good.content
		}
	}
	return out
}

// outcome is what one feed contributes to one request.
type outcome struct {
	snap *snapshot // nil: nothing to show
	// stale marks snap as the last good content of a feed whose latest
	// fetch failed.
	stale  bool
	reason string // why the latest fetch failed, for the model
}

// collect resolves every feed of the exchange's agent, in manifest order:
// from the cache when fresh (or backing off after a failure), else by one
// fetch, the stale ones concurrently.
func (d *Decorator) collect(ctx context.Context, x *exchange.Exchange) []outcome {
	feeds := x.Agent.Feeds
	outs := make([]outcome, len(feeds))
	now := d.now()
	var g errgroup.Group
	g.SetLimit(d.concurrency)
	for i := range feeds {
		f := &feeds[i]
		key := cacheKey(x.Agent.ID, f.FetchURL())
		e, _ := d.cache.get(key)
		ttl := ttlOf(f)
		if e.good != nil {
			ttl = e.good.ttl
		}
		switch {
		case e.fresh(now):
			outs[i] = outcome{snap: e.good}
			d.emitCached(x, f, e, false)
			continue
		case e.backingOff(now, d.backoff, ttl):
			outs[i] = outcome{snap: e.good, stale: e.good != nil, reason: e.failReason}
			d.emitCached(x, f, e, true)
			continue
		}
		if d.beforeFlight != nil {
			d.beforeFlight(key)
		}
		g.Go(func() error {
			outs[i] = d.fetchShared(ctx, x, f, key)
			return nil
		})
	}
	_ = g.Wait()
	return outs
}

func ttlOf(f *manifest.Feed) time.Duration { return time.Duration(f.TTL) * time.Second }

// fetchShared fetches one feed, sharing the fetch with every concurrent
// request of the same agent for the same URL. The fetch is detached from the
// cancellation of the request that started it (others may be waiting on
// it) and bounded by the per-fetch timeout; a cancelled request stops
// waiting and shows what the cache holds.
func (d *Decorator) fetchShared(ctx context.Context, x *exchange.Exchange, f *manifest.Feed, key string) outcome {
	ch := d.flights.DoChan(key, func() (any, error) {
		// A fetch that finished between our cache check and this flight
		// may already have made the entry fresh.
		if e, _ := d.cache.get(key); e.fresh(d.now()) {
			d.emitCached(x, f, e, false)
			return outcome{snap: e.good}, nil
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.timeout)
		defer cancel()
		return d.fetch(fctx, x, f, key), nil
	})
	select {
	case r := <-ch:
		return r.Val.(outcome)
	case <-ctx.Done():
		e, _ := d.cache.get(key)
		return outcome{snap: e.good, stale: e.good != nil, reason: "request cancelled before the fetch finished"}
	}
}

// fetch performs one GET of f and records the result in the cache and the
// audit log.
func (d *Decorator) fetch(ctx context.Context, x *exchange.Exchange, f *manifest.Feed, key string) outcome {
	start := time.Now()
	body, ctype, limited, status, err := d.get(ctx, x, f)
	latency := time.Since(start)
	ev := audit.Event{
		Type:       audit.TypeFeedFetch,
		ClawID:     x.Agent.ID,
		RequestID:  x.ID,
		Feed:       f.Name,
		Service:    f.Source,
		StatusCode: status,
		Bytes:      audit.Ptr(len(body)),
		LatencyMS:  audit.Ptr(latency.Milliseconds()),
	}
	now := d.now()
	if err != nil {
		reason := failureReason(err, status, d.timeout)
		prev := d.cache.putFailure(key, now, reason)
		ev.Status, ev.Stale, ev.Error = "error", prev != nil, err.Error()
		d.rec.Emit(ev)
		return outcome{snap: prev, stale: prev != nil, reason: reason}
	}
	s := newSnapshot(withoutBearer(body, bearerFor(x, f)), ctype, limited, ttlOf(f), now)
	d.cache.putGood(key, s)
	ev.Status = "ok"
	d.rec.Emit(ev)
	return outcome{snap: s}
}

// emitCached records a request served from the cache without a fetch:
// fresh content (failed=false) or, while backing off, the last failure's
// stale content or placeholder.
func (d *Decorator) emitCached(x *exchange.Exchange, f *manifest.Feed, e cacheEntry, failed bool) {
	if d.rec == nil {
		return
	}
	ev := audit.Event{
		Type:      audit.TypeFeedFetch,
		ClawID:    x.Agent.ID,
		RequestID: x.ID,
		Feed:      f.Name,
		Service:   f.Source,
		Cached:    true,
		Status:    "ok",
	}
	if e.good != nil {
		ev.Bytes = audit.Ptr(e.good.bytes)
	}
	if failed {
		ev.Status, ev.Stale, ev.Error = "error", e.good != nil, e.failReason
	}
	d.rec.Emit(ev)
}

// reportManifestError emits one manifest_error event per loaded snapshot of
// an agent whose feeds.json is malformed: a reload yields a new Agent and so
// a new event, while the requests in between stay quiet.
func (d *Decorator) reportManifestError(x *exchange.Exchange) {
	a := x.Agent
	d.mu.Lock()
	seen := d.reported[a.ID] == a
	if !seen {
		d.reported[a.ID] = a
	}
	d.mu.Unlock()
	if seen {
		return
	}
	d.rec.Emit(audit.Event{
		Type:      audit.TypeManifestError,
		ClawID:    a.ID,
		RequestID: x.ID,
		Status:    "error",
		Error:     a.FeedsErr.Error(),
	})
}
