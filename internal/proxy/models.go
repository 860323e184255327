package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

const (
	pathModels = "/v1/models"
	// modelListTTL is how long a provider's own model list is reused,
	// and modelListFailTTL how long a failure to fetch it is (so runners
	// asking again and again do not call the provider each time).
	modelListTTL     = 5 * time.Minute
	modelListFailTTL = 10 * time.Second
	// maxModelListBytes bounds a provider's model list.
	maxModelListBytes = 4 << 20
)

// serveModels answers GET /v1/models and GET /v1/models/{id}: the models
// the calling agent may use (docs/cllama.md "Model discovery") in the shape of the
// format whose clients sent the request.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	id := s.newRequestID()
	w.Header().Set("X-Request-Id", id)
	fi, f := s.catalogFormat(r.Header)
	reject := func(a *agentctx.Agent, se *apierror.Error) {
		s.refuse(w, f, &recorder.Refusal{RequestID: id, Format: f.Name(), Agent: a, Start: start, Err: se})
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		reject(nil, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "use GET "+pathModels))
		return
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
	models, err := s.agentModels(r.Context(), agent, fi, r.Header, start)
	if err != nil {
		reject(agent, asStatus(err))
		return
	}
	var body []byte
	if want, one := strings.CutPrefix(r.URL.Path, pathModels+"/"); one {
		found := false
		for _, m := range models {
			if m.ID == want {
				body, found = f.ModelObject(m), true
				break
			}
		}
		if !found {
			reject(agent, apierror.New(http.StatusNotFound, apierror.TypeNotFound,
				fmt.Sprintf("model %s is not one agent %s may use (GET %s lists them)", quoteForMessage(want), agent.ID, pathModels)))
			return
		}
	} else {
		body = f.ModelList(models)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body)
}

// catalogFormat is the first format claiming a request's headers, else
// the fallback (which must list models).
func (s *Server) catalogFormat(h http.Header) (int, wire.ModelCatalog) {
	fb := -1
	for i, f := range s.formats {
		mc, ok := f.(wire.ModelCatalog)
		if !ok {
			continue
		}
		if mc.ClaimsModelRequest(h) {
			return i, mc
		}
		if f == s.fallback {
			fb = i
		}
	}
	if fb < 0 {
		panic("proxy: the fallback format cannot list models (wire.ModelCatalog)")
	}
	return fb, s.fallback.(wire.ModelCatalog)
}

// agentModels is what agent may use: its allow-list; else, the model list
// of the provider that bare names on format fi's endpoint go to (fetched
// with the provider's key, cached modelListTTL); else none.
func (s *Server) agentModels(ctx context.Context, agent *agentctx.Agent, fi int, h http.Header, now time.Time) ([]wire.Model, error) {
	if len(agent.Metadata.Models) > 0 {
		out := make([]wire.Model, len(agent.Metadata.Models))
		for i, m := range agent.Metadata.Models {
			p, _, _ := strings.Cut(m, "/")
			out[i] = wire.Model{ID: m, Provider: p}
		}
		return out, nil
	}
	rt := s.router.bareRoute(s.providers.get(now), fi)
	if rt == nil {
		return []wire.Model{}, nil
	}
	return s.modelLists.get(ctx, s, rt, h, now)
}

// modelListCache holds each provider's own model list for modelListTTL,
// a failure to fetch it for modelListFailTTL. Requests for a list being
// fetched wait for that fetch: one upstream call however many ask.
type modelListCache struct {
	mu      sync.Mutex
	entries map[string]*modelListEntry
}

// modelListEntry is a provider's list as fetched; its other fields are
// set before done is closed, and read after.
type modelListEntry struct {
	done    chan struct{}
	models  []wire.Model
	err     error
	fetched time.Time
}

// current reports whether e may answer a request at now: it is being
// fetched (the request waits for it), or was fetched within its TTL.
func (e *modelListEntry) current(now time.Time) bool {
	select {
	case <-e.done:
	default:
		return true // being fetched: wait for it
	}
	ttl := modelListTTL
	if e.err != nil {
		ttl = modelListFailTTL
	}
	return now.Sub(e.fetched) < ttl
}

func (c *modelListCache) get(ctx context.Context, s *Server, rt *Route, h http.Header, now time.Time) ([]wire.Model, error) {
	key := rt.Name + "\x00" + rt.BaseURL
	c.mu.Lock()
	e := c.entries[key]
	if e == nil || !e.current(now) {
		e = &modelListEntry{done: make(chan struct{})}
		if c.entries == nil {
			c.entries = map[string]*modelListEntry{}
		}
		c.entries[key] = e
		// The fetch is everyone's: it outlives the request that started
		// it, whose runner may leave while others wait.
		fctx, h := context.WithoutCancel(ctx), h.Clone()
		go func() {
			e.models, e.err = s.fetchModels(fctx, rt, h)
			e.fetched = s.now()
			close(e.done)
		}()
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		return e.models, e.err
	case <-ctx.Done():
		return nil, apierror.New(StatusClientClosed, apierror.TypeAPI, "client disconnected while the model list was fetched")
	}
}

// fetchModels is GET <base>/models of rt with the provider's credential.
// OpenAI-compatible and Anthropic lists both hold {"data":[{"id":…}]}.
func (s *Server) fetchModels(ctx context.Context, rt *Route, h http.Header) ([]wire.Model, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.FirstByteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rt.URL("/models"), nil)
	if err != nil {
		return nil, err
	}
	copyRequestHeaders(req.Header, h, s.forward)
	switch rt.Auth {
	case manifest.ProviderAuthBearer:
		req.Header["Authorization"] = rt.authValue
	case manifest.ProviderAuthXAPIKey:
		req.Header["X-Api-Key"] = rt.authValue
	}
	resp, err := s.transport.RoundTrip(req)
	if err != nil {
		return nil, apierror.New(http.StatusBadGateway, apierror.TypeUpstream, fmt.Sprintf("provider %s: listing models: %v", rt.Name, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxModelListBytes))
	if err != nil {
		return nil, apierror.New(http.StatusBadGateway, apierror.TypeUpstream, fmt.Sprintf("provider %s: listing models: %v", rt.Name, err))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, apierror.New(http.StatusBadGateway, apierror.TypeUpstream, fmt.Sprintf("provider %s: listing models: status %d", rt.Name, resp.StatusCode))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, apierror.New(http.StatusBadGateway, apierror.TypeUpstream, fmt.Sprintf("provider %s: listing models: %v", rt.Name, err))
	}
	out := make([]wire.Model, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			out = append(out, wire.Model{ID: m.ID, Provider: rt.Name})
		}
	}
	return out, nil
}
