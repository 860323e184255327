package modelsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// stored is a response the server keeps.
type stored struct {
	body   json.RawMessage
	input  []json.RawMessage
	output []json.RawMessage
}

// storedResponse returns a kept response, or nil.
func (s *Server) storedResponse(id string) *stored {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stored[id]
}

// knownItem reports whether a kept response produced the item id.
func (s *Server) knownItem(id string) bool {
	if id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stored {
		for _, raw := range st.output {
			var it respItem
			if json.Unmarshal(raw, &it) == nil && it.ID == id {
				return true
			}
		}
	}
	return false
}

// keep stores a response, dropping the oldest beyond KeepRequests.
func (s *Server) keep(id string, st *stored) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored == nil {
		s.stored = map[string]*stored{}
	}
	if _, ok := s.stored[id]; !ok {
		s.storedOrder = append(s.storedOrder, id)
	}
	s.stored[id] = st
	for len(s.storedOrder) > s.opts.KeepRequests {
		delete(s.stored, s.storedOrder[0])
		s.storedOrder = s.storedOrder[1:]
	}
}

// forget drops a kept response; it reports whether there was one.
func (s *Server) forget(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.stored[id]; !ok {
		return false
	}
	delete(s.stored, id)
	for i, v := range s.storedOrder {
		if v == id {
			s.storedOrder = append(s.storedOrder[:i], s.storedOrder[i+1:]...)
			break
		}
	}
	return true
}

// serveStored answers GET and DELETE /v1/responses/{id} and GET
// /v1/responses/{id}/input_items.
func (s *Server) serveStored(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rec := Record{Time: s.opts.Now().UTC(), Path: r.URL.Path, Auth: authHeaders(r), Status: http.StatusOK}
	defer func() { s.record(rec) }()
	st := s.storedResponse(id)
	if st == nil {
		rec.Status, rec.Error = http.StatusNotFound, "no such response"
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "", fmt.Sprintf("Response with id '%s' not found.", id))
		return
	}
	switch {
	case r.Method == http.MethodDelete:
		s.forget(id)
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
	case strings.HasSuffix(r.URL.Path, "/input_items"):
		data := make([]json.RawMessage, 0, len(st.input))
		for i, raw := range st.input {
			var item map[string]json.RawMessage
			if json.Unmarshal(raw, &item) != nil || item == nil {
				continue
			}
			if _, ok := item["id"]; !ok {
				item["id"] = mustMarshal(fmt.Sprintf("item_%s_%d", id, i))
			}
			if _, ok := item["type"]; !ok {
				item["type"] = json.RawMessage(`"message"`)
			}
			data = append(data, mustMarshal(item))
		}
		list := map[string]any{"object": "list", "data": data, "has_more": false, "first_id": nil, "last_id": nil}
		if len(data) > 0 {
			var first, last struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(data[0], &first)
			_ = json.Unmarshal(data[len(data)-1], &last)
			list["first_id"], list["last_id"] = first.ID, last.ID
		}
		writeJSON(w, http.StatusOK, list)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(st.body, '\n'))
	}
}
