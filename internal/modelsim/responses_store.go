package modelsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// stored is a response the server keeps, with what it was made from.
type stored struct {
	body json.RawMessage
	// input is the effective input (previous turns included), each item
	// with an id; output the response's output items.
	input  []json.RawMessage
	output []json.RawMessage
}

// keptResponses are the responses kept for previous_response_id and GET
// /v1/responses/{id}: at most max, the oldest dropped first. Its methods
// are safe for concurrent use.
type keptResponses struct {
	mu    sync.Mutex
	max   int
	byID  map[string]*stored
	order []string // response ids, oldest first
	// items maps the id of an output item to the response that made it,
	// so an input item can be resolved as the API resolves kept items.
	items map[string]string
}

func newKeptResponses(max int) *keptResponses {
	return &keptResponses{max: max, byID: map[string]*stored{}, items: map[string]string{}}
}

// get returns a kept response, or nil.
func (k *keptResponses) get(id string) *stored {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.byID[id]
}

// hasItem reports whether a kept response produced the item id.
func (k *keptResponses) hasItem(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.items[id]
	return ok && id != ""
}

// add keeps a response, dropping the oldest beyond max.
func (k *keptResponses) add(id string, st *stored) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.byID[id]; ok {
		k.dropLocked(id)
	}
	k.byID[id] = st
	k.order = append(k.order, id)
	for _, itemID := range itemIDs(st.output) {
		k.items[itemID] = id
	}
	for len(k.order) > k.max {
		k.dropLocked(k.order[0])
	}
}

// remove drops a kept response; it reports whether there was one.
func (k *keptResponses) remove(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.byID[id]; !ok {
		return false
	}
	k.dropLocked(id)
	return true
}

func (k *keptResponses) dropLocked(id string) {
	st := k.byID[id]
	delete(k.byID, id)
	for _, itemID := range itemIDs(st.output) {
		if k.items[itemID] == id {
			delete(k.items, itemID)
		}
	}
	if i := indexOf(k.order, id); i >= 0 {
		k.order = append(k.order[:i], k.order[i+1:]...)
	}
}

func indexOf(ids []string, id string) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}

// itemID is an item's id, or "".
func itemID(raw json.RawMessage) string {
	var it struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &it)
	return it.ID
}

// itemIDs are the ids of items, where they have one.
func itemIDs(items []json.RawMessage) []string {
	var ids []string
	for _, raw := range items {
		if id := itemID(raw); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// withIDs gives each item that has no id one, as the API does with the
// items it keeps, so an item has one id through a chain of responses.
func (s *Server) withIDs(items []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, raw := range items {
		out[i] = raw
		var item map[string]json.RawMessage
		if json.Unmarshal(raw, &item) != nil || item == nil {
			continue
		}
		var id, typ string
		_ = json.Unmarshal(item["id"], &id)
		if id != "" {
			continue
		}
		_ = json.Unmarshal(item["type"], &typ)
		prefix := "item_sim"
		switch typ {
		case "", "message":
			prefix = "msg_sim"
		case "function_call":
			prefix = "fc_sim"
		}
		item["id"] = mustMarshal(s.ids.next(prefix))
		out[i] = mustMarshal(item)
	}
	return out
}

// listedItem is an input item as the API lists a kept one: typed, message
// content as a list of parts, and a status on messages and tool items.
func listedItem(raw json.RawMessage) (json.RawMessage, bool) {
	var item map[string]json.RawMessage
	if json.Unmarshal(raw, &item) != nil || item == nil {
		return nil, false
	}
	var typ, role, text string
	_ = json.Unmarshal(item["type"], &typ)
	_ = json.Unmarshal(item["role"], &role)
	if typ == "" {
		typ = "message"
		item["type"] = mustMarshal(typ)
	}
	if typ == "message" && json.Unmarshal(item["content"], &text) == nil {
		part := map[string]any{"type": "input_text", "text": text}
		if role == "assistant" {
			part = map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
		}
		item["content"] = mustMarshal([]any{part})
	}
	switch typ {
	case "message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output":
		if _, ok := item["status"]; !ok {
			item["status"] = json.RawMessage(`"completed"`)
		}
	}
	return mustMarshal(item), true
}

// inputItemsPage is one page of GET /v1/responses/{id}/input_items: the
// effective input, newest first unless order=asc, limit items (default
// 20, 1 to 100) from just after the item named by after.
func inputItemsPage(st *stored, q url.Values) (map[string]any, *apiError) {
	invalid := func(param, msg string) *apiError {
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, msg: msg}
	}
	order := q.Get("order")
	if order != "" && order != "asc" && order != "desc" {
		return nil, invalid("order", fmt.Sprintf("Invalid value for 'order': '%s'. Supported values are: 'asc' and 'desc'.", order))
	}
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return nil, invalid("limit", fmt.Sprintf("Invalid 'limit': '%s'. Expected an integer from 1 to 100.", v))
		}
		limit = n
	}
	items := []json.RawMessage{}
	for _, raw := range st.input {
		if item, ok := listedItem(raw); ok {
			items = append(items, item)
		}
	}
	if order != "asc" {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	if after := q.Get("after"); after != "" {
		// The page starts just after that item; an id not in the list
		// has nothing after it.
		start := len(items)
		for i, raw := range items {
			if itemID(raw) == after {
				start = i + 1
				break
			}
		}
		items = items[start:]
	}
	hasMore := len(items) > limit
	items = items[:min(limit, len(items))]
	page := map[string]any{"object": "list", "data": items, "first_id": nil, "last_id": nil, "has_more": hasMore}
	if len(items) > 0 {
		page["first_id"], page["last_id"] = itemID(items[0]), itemID(items[len(items)-1])
	}
	return page, nil
}

// serveStored answers GET and DELETE /v1/responses/{id} and GET
// /v1/responses/{id}/input_items.
func (s *Server) serveStored(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rec := Record{Time: s.opts.Now().UTC(), Path: r.URL.Path, Auth: authHeaders(r), Status: http.StatusOK}
	defer func() { s.record(rec) }()
	fail := func(e *apiError) {
		rec.Status, rec.Error = e.status, e.msg
		writeOpenAIErrorParam(w, e.status, e.typ, e.code, e.param, e.msg)
	}
	st := s.kept.get(id)
	if st == nil {
		fail(&apiError{status: http.StatusNotFound, typ: "invalid_request_error", msg: fmt.Sprintf("Response with id '%s' not found.", id)})
		return
	}
	switch {
	case r.Method == http.MethodDelete:
		s.kept.remove(id)
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
	case strings.HasSuffix(r.URL.Path, "/input_items"):
		page, err := inputItemsPage(st, r.URL.Query())
		if err != nil {
			fail(err)
			return
		}
		writeJSON(w, http.StatusOK, page)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(st.body, '\n'))
	}
}
