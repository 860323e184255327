package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Store keeps approval requests. Every method is safe for concurrent use.
type Store interface {
	// Create stores a pending request.
	Create(ctx context.Context, r *Request) error
	// Get returns a request (ErrNotFound).
	Get(ctx context.Context, id string) (*Request, error)
	// Pending lists the pending requests, oldest first.
	Pending(ctx context.Context) ([]*Request, error)
	// Decide ends a pending request with d at now and returns it; a
	// request no longer pending is returned as it is with ErrDecided.
	Decide(ctx context.Context, id string, d Decision, now time.Time) (*Request, error)
	// Watch returns a channel that receives (or is closed) when request id
	// may have left Pending, and a function that stops watching.
	Watch(id string) (<-chan struct{}, func())
	Close() error
}

// MaxRequests bounds the requests a Store keeps (pending and recently
// ended); a Create beyond it fails, and the call is not executed.
const MaxRequests = 4096

// KeepEnded is how long an ended request stays readable (GET answers its
// final state, POST 409).
const KeepEnded = time.Hour

// Local is a Store in this process's memory. With a directory it also
// keeps each pending request as a file, so the requests a process left
// pending when it stopped are found when cllama starts again and end as
// lost (OpenLocal).
type Local struct {
	dir string
	mu  sync.Mutex
	m   map[string]*Request
	// watchers of each request.
	watch map[string][]chan struct{}
}

// NewLocal returns a Store in memory only.
func NewLocal() *Local {
	return &Local{m: map[string]*Request{}, watch: map[string][]chan struct{}{}}
}

// OpenLocal returns a Store keeping pending requests under dir (created
// 0700), and the requests a previous process left pending there, now
// ended lost at now (their files removed).
func OpenLocal(dir string, now time.Time) (*Local, []*Request, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("approvals: %w", err)
	}
	s := NewLocal()
	s.dir = dir
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("approvals: %w", err)
	}
	var lost []*Request
	for _, e := range entries {
		name := e.Name()
		id := name[:max(0, len(name)-len(".json"))]
		if filepath.Ext(name) != ".json" || !ValidID(id) {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		var r Request
		if err == nil && json.Unmarshal(data, &r) == nil && r.ID == id && r.State == Pending {
			decide(&r, Decision{State: Lost, By: "cllama", Reason: "cllama restarted while the call waited; it will not run"}, now)
			if len(s.m) < MaxRequests {
				s.m[id] = &r
			}
			lost = append(lost, &r)
		}
		_ = os.Remove(path)
	}
	return s, lost, nil
}

func (s *Local) path(id string) string { return filepath.Join(s.dir, id+".json") }

// Create implements Store.
func (s *Local) Create(_ context.Context, r *Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(r.CreatedAt)
	if len(s.m) >= MaxRequests {
		return fmt.Errorf("approvals: %d requests are kept already, the most allowed", MaxRequests)
	}
	if s.dir != "" {
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := os.WriteFile(s.path(r.ID), data, 0o600); err != nil {
			return fmt.Errorf("approvals: %w", err)
		}
	}
	c := *r
	s.m[r.ID] = &c
	return nil
}

// pruneLocked forgets requests ended more than KeepEnded before now.
func (s *Local) pruneLocked(now time.Time) {
	if len(s.m) < MaxRequests/2 {
		return
	}
	for id, r := range s.m {
		if r.DecidedAt != nil && now.Sub(*r.DecidedAt) > KeepEnded {
			delete(s.m, id)
		}
	}
}

// Get implements Store.
func (s *Local) Get(_ context.Context, id string) (*Request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[id]
	if !ok {
		return nil, ErrNotFound
	}
	c := *r
	return &c, nil
}

// Pending implements Store.
func (s *Local) Pending(context.Context) ([]*Request, error) {
	s.mu.Lock()
	var out []*Request
	for _, r := range s.m {
		if !r.Final() {
			c := *r
			out = append(out, &c)
		}
	}
	s.mu.Unlock()
	sortRequests(out)
	return out, nil
}

func sortRequests(rs []*Request) {
	sort.Slice(rs, func(i, j int) bool {
		if !rs[i].CreatedAt.Equal(rs[j].CreatedAt) {
			return rs[i].CreatedAt.Before(rs[j].CreatedAt)
		}
		return rs[i].ID < rs[j].ID
	})
}

// Decide implements Store.
func (s *Local) Decide(_ context.Context, id string, d Decision, now time.Time) (*Request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[id]
	if !ok {
		return nil, ErrNotFound
	}
	if err := check(r, d); err != nil {
		c := *r
		return &c, err
	}
	decide(r, d, now)
	if s.dir != "" {
		_ = os.Remove(s.path(id))
	}
	for _, ch := range s.watch[id] {
		close(ch)
	}
	delete(s.watch, id)
	c := *r
	return &c, nil
}

// Watch implements Store.
func (s *Local) Watch(id string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	if r, ok := s.m[id]; ok && r.Final() {
		close(ch)
		return ch, func() {}
	}
	s.watch[id] = append(s.watch[id], ch)
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		list := s.watch[id]
		for i, c := range list {
			if c == ch {
				s.watch[id] = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(s.watch[id]) == 0 {
			delete(s.watch, id)
		}
	}
}

// Close implements Store.
func (s *Local) Close() error { return nil }
