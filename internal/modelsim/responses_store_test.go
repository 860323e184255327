package modelsim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"testing"
)

func TestKeptResponsesDropTheOldest(t *testing.T) {
	k := newKeptResponses(2)
	for _, id := range []string{"resp_1", "resp_2", "resp_3"} {
		k.add(id, &stored{output: []json.RawMessage{json.RawMessage(`{"type":"reasoning","id":"rs_` + id + `"}`)}})
	}
	if k.get("resp_1") != nil || k.hasItem("rs_resp_1") {
		t.Fatal("the oldest response, or its items, outlived the bound")
	}
	if k.get("resp_2") == nil || !k.hasItem("rs_resp_3") || k.hasItem("") {
		t.Fatal("a kept response or item was lost")
	}
	if !k.remove("resp_2") || k.remove("resp_2") || k.hasItem("rs_resp_2") || !reflect.DeepEqual(k.order, []string{"resp_3"}) {
		t.Fatalf("remove: order %v", k.order)
	}
}

func TestWithIDs(t *testing.T) {
	s := newTestServer(t)
	got := s.withIDs([]json.RawMessage{
		json.RawMessage(`{"role":"user","content":"hi"}`),
		json.RawMessage(`{"type":"function_call","call_id":"c","name":"t","arguments":"{}"}`),
		json.RawMessage(`{"type":"function_call_output","call_id":"c","output":"r","id":""}`),
		json.RawMessage(`{"type":"reasoning","id":"rs_kept","summary":[]}`),
		json.RawMessage(`null`),
	})
	if ids := itemIDs(got); !reflect.DeepEqual(ids, []string{"msg_sim000001", "fc_sim000002", "item_sim000003", "rs_kept"}) || string(got[4]) != "null" {
		t.Fatalf("ids %v, items %s", ids, got)
	}
}

func TestInputItemsPage(t *testing.T) {
	st := &stored{input: []json.RawMessage{
		json.RawMessage(`{"id":"m1","role":"user","content":"question"}`),
		json.RawMessage(`{"id":"m2","type":"message","role":"assistant","content":"answer"}`),
		json.RawMessage(`{"id":"f3","type":"function_call","call_id":"c","name":"t","arguments":"{}"}`),
		json.RawMessage(`{"id":"o4","type":"function_call_output","call_id":"c","output":"r"}`),
		json.RawMessage(`{"id":"r5","type":"reasoning","summary":[]}`),
	}}
	for _, tc := range []struct {
		query   string
		ids     []string
		hasMore bool
	}{
		{"", []string{"r5", "o4", "f3", "m2", "m1"}, false},
		{"order=asc", []string{"m1", "m2", "f3", "o4", "r5"}, false},
		{"order=asc&limit=2", []string{"m1", "m2"}, true},
		{"order=asc&limit=2&after=m2", []string{"f3", "o4"}, true},
		{"order=asc&limit=2&after=o4", []string{"r5"}, false},
		{"limit=3&after=r5", []string{"o4", "f3", "m2"}, true},
		{"after=nope", nil, false},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			page, err := inputItemsPage(st, q)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(page)
			var got struct {
				Data    []json.RawMessage `json:"data"`
				FirstID *string           `json:"first_id"`
				LastID  *string           `json:"last_id"`
				HasMore bool              `json:"has_more"`
				Object  string            `json:"object"`
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if ids := itemIDs(got.Data); !reflect.DeepEqual(ids, tc.ids) || got.HasMore != tc.hasMore || got.Object != "list" || got.Data == nil {
				t.Fatalf("page %s", b)
			}
			if len(tc.ids) > 0 && (*got.FirstID != tc.ids[0] || *got.LastID != tc.ids[len(tc.ids)-1]) || len(tc.ids) == 0 && got.FirstID != nil {
				t.Fatalf("first/last ids in %s", b)
			}
		})
	}
	for _, query := range []string{"order=newest", "limit=0", "limit=101", "limit=x"} {
		q, _ := url.ParseQuery(query)
		if _, err := inputItemsPage(st, q); err == nil || err.status != http.StatusBadRequest || err.param == "" {
			t.Errorf("%s: %+v", query, err)
		}
	}
}

// Kept items are listed as the API lists them: message content as parts,
// with a status.
func TestListedItem(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"m","role":"user","content":"q"}`:                                                            `{"content":[{"text":"q","type":"input_text"}],"id":"m","role":"user","status":"completed","type":"message"}`,
		`{"id":"m","type":"message","role":"assistant","content":"a"}`:                                      `{"content":[{"annotations":[],"text":"a","type":"output_text"}],"id":"m","role":"assistant","status":"completed","type":"message"}`,
		`{"id":"m","role":"developer","content":[{"type":"input_text","text":"d"}],"status":"in_progress"}`: `{"content":[{"type":"input_text","text":"d"}],"id":"m","role":"developer","status":"in_progress","type":"message"}`,
		`{"id":"o","type":"function_call_output","call_id":"c","output":"r"}`:                               `{"call_id":"c","id":"o","output":"r","status":"completed","type":"function_call_output"}`,
		`{"id":"r","type":"reasoning","summary":[]}`:                                                        `{"id":"r","summary":[],"type":"reasoning"}`,
	} {
		got, ok := listedItem(json.RawMessage(in))
		if !ok || string(got) != want {
			t.Errorf("listedItem(%s)\n got %s\nwant %s", in, got, want)
		}
	}
	if _, ok := listedItem(json.RawMessage(`null`)); ok {
		t.Error("null listed as an item")
	}
}
