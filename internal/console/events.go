package console

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"
)

// maxStreams bounds the live pages open at once.
const maxStreams = 64

// heartbeat is how often a stream sends the counters unprompted: they
// also change as the window slides.
const heartbeat = 5 * time.Second

// minGap spaces the updates of a busy pod.
const minGap = 500 * time.Millisecond

var streams atomic.Int64

type liveUpdate struct {
	Agents  map[string]liveAgentView `json:"agents"`
	Version uint64                   `json:"version"`
}

type liveAgentView struct {
	Requests int    `json:"requests"`
	Errors   int    `json:"errors"`
	Last     string `json:"last"`
	Ago      string `json:"ago"`
}

// events streams the live counters (Server-Sent Events) while the session
// lasts.
func (c *Console) events(w http.ResponseWriter, r *http.Request, s *session) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	if streams.Add(1) > maxStreams {
		streams.Add(-1)
		http.Error(w, "too many live pages open", http.StatusServiceUnavailable)
		return
	}
	defer streams.Add(-1)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		snap, version, changed := c.live.Snapshot()
		now := c.opts.Now()
		u := liveUpdate{Agents: make(map[string]liveAgentView, len(snap)), Version: version}
		for id, a := range snap {
			v := liveAgentView{Requests: a.Requests, Errors: a.Errors, Ago: ago(now, a.Last)}
			if !a.Last.IsZero() {
				v.Last = a.Last.UTC().Format(time.RFC3339)
			}
			u.Agents[id] = v
		}
		b, _ := json.Marshal(u)
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(append(append([]byte("data: "), b...), '\n', '\n')); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-c.done:
			return
		case <-changed:
		case <-t.C:
		}
		if s.id != "bearer" {
			if _, ok := c.sessions.get(r); !ok {
				return // logged out
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(minGap):
		}
	}
}
