package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/owners"
)

const bobToken = "bob:s3cret-bob"

// storedProviders configures two providers at the fake upstream, neither
// declaring its formats.
const storedProviders = `{"providers":{"fake":{"base_url":"{UP}/v1","api_key":"` + providerKey + `","auth":"bearer"},
	"fake2":{"base_url":"{UP}/v1","api_key":"other-key","auth":"bearer"}}}`

// storingProvider answers like a provider of the Responses API: POST
// /v1/responses creates resp_<n> (streaming or not), and the object routes
// act on the responses it created. Other paths get defaultProvider.
type storingProvider struct {
	mu     sync.Mutex
	n      int
	stored map[string]bool
	// hold, when set, stalls a stream after its response.created event
	// until it is closed.
	hold chan struct{}
}

// responseJSON is a response object as the provider sends it; one in
// progress has no output or usage yet.
func responseJSON(id, status string) string {
	output, usage := `[]`, `null`
	if status != "in_progress" {
		output = `[{"type":"message","id":"msg_` + id + `","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hello there","annotations":[]}]}]`
		usage = `{"input_tokens":11,"output_tokens":3,"total_tokens":14,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}`
	}
	return `{"id":"` + id + `","object":"response","created_at":1700000000,"status":"` + status + `","model":"gpt-fake",` +
		`"output":` + output + `,"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"store":true,"usage":` + usage + `}`
}

func (sp *storingProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sp.mu.Lock()
	if sp.stored == nil {
		sp.stored = map[string]bool{}
	}
	sp.mu.Unlock()
	if r.Method == http.MethodPost && r.URL.Path == "/v1/responses" {
		sp.create(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/responses/")
	if !ok {
		defaultProvider(w, r)
		return
	}
	id, sub, _ := strings.Cut(rest, "/")
	body, _ := io.ReadAll(r.Body)
	sp.mu.Lock()
	known := sp.stored[id]
	if known && r.Method == http.MethodDelete {
		delete(sp.stored, id)
	}
	sp.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !known {
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"error":{"message":"No response found with id '%s'.","type":"invalid_request_error","param":null,"code":null}}`, id)
		return
	}
	switch {
	case r.Method == http.MethodGet && sub == "" && (r.URL.Query().Get("stream") == "true" || bytes.Contains(body, []byte(`"stream":true`))):
		// A background response's events, replayed.
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":%s}\n\n", responseJSON(id, "in_progress"))
		fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":%s}\n\n", responseJSON(id, "completed"))
	case r.Method == http.MethodGet && sub == "":
		_, _ = io.WriteString(w, responseJSON(id, "completed"))
	case r.Method == http.MethodDelete && sub == "":
		_, _ = io.WriteString(w, `{"id":"`+id+`","object":"response.deleted","deleted":true}`)
	case r.Method == http.MethodGet && sub == "input_items":
		_, _ = io.WriteString(w, `{"object":"list","data":[{"type":"message","id":"msg_in","status":"completed","role":"user","content":[{"type":"input_text","text":"hi"}]}],"first_id":"msg_in","last_id":"msg_in","has_more":false}`)
	case r.Method == http.MethodPost && sub == "cancel":
		_, _ = io.WriteString(w, responseJSON(id, "cancelled"))
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"message":"no such route","type":"invalid_request_error"}}`)
	}
}

func (sp *storingProvider) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	sp.mu.Lock()
	sp.n++
	id := fmt.Sprint("resp_", sp.n)
	sp.stored[id] = true
	hold := sp.hold
	sp.mu.Unlock()
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, responseJSON(id, "completed"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":%s}\n\n", responseJSON(id, "in_progress"))
	w.(http.Flusher).Flush()
	if hold != nil {
		<-hold
	}
	fmt.Fprintf(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_%s\",\"output_index\":0,\"content_index\":0,\"delta\":\"hello there\",\"logprobs\":[]}\n\n", id)
	fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":%s}\n\n", responseJSON(id, "completed"))
}

// newStoredPod is a pod with agents alice and bob in front of a storing
// provider.
func newStoredPod(t *testing.T, opts ...podOption) (*pod, *storingProvider) {
	t.Helper()
	p := newPodWith(t, storedProviders, opts...)
	sp := &storingProvider{}
	p.up.setHandler(sp.ServeHTTP)
	writeFile(t, filepath.Join(p.root, "bob", "metadata.json"), `{"token":"`+bobToken+`","pod":"test-pod"}`)
	return p, sp
}

func newResponse(t *testing.T, c openai.Client, model, previous string) (*responses.Response, error) {
	t.Helper()
	params := responses.ResponseNewParams{
		Model: model,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
	}
	if previous != "" {
		params.PreviousResponseID = openai.String(previous)
	}
	return c.Responses.New(context.Background(), params)
}

// wantAPIError checks that err is the SDK's API error with status and a
// message containing msg.
func wantAPIError(t *testing.T, what string, err error, status int, msg string) {
	t.Helper()
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != status || !strings.Contains(oe.Message, msg) {
		t.Errorf("%s: error %v; want %d %q", what, err, status, msg)
	}
}

// A stored response is its creator's: the official SDK reads, lists and
// deletes it through cllama, with the provider's credential; another
// agent is told it does not exist, whatever it tries, and nothing reaches
// the provider for it.
func TestStoredResponsesBelongToTheirAgent(t *testing.T) {
	p, _ := newStoredPod(t)
	ctx := context.Background()
	alice, bob := openAIClient(p, aliceToken), openAIClient(p, bobToken)

	res, err := newResponse(t, alice, "fake/gpt-fake", "")
	if err != nil || res.ID != "resp_1" || res.OutputText() != "hello there" {
		t.Fatalf("create: %v %+v", err, res)
	}
	stream := alice.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "fake/gpt-fake", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var streamed string
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.completed" {
			streamed = ev.Response.ID
		}
	}
	if err := stream.Err(); err != nil || streamed != "resp_2" {
		t.Fatalf("stream: %v, id %q", err, streamed)
	}
	for _, id := range []string{"resp_1", "resp_2"} {
		if o, ok := p.srv.owners.Owner(id); !ok || o != (owners.Owner{Agent: "alice", Provider: "fake"}) {
			t.Errorf("owner of %s: %+v %v", id, o, ok)
		}
	}
	before := len(p.up.requests())

	// Another agent: every route says not found, as for an id nobody has.
	for _, id := range []string{"resp_1", "resp_nobody"} {
		want := `response "` + id + `" not found`
		_, err = bob.Responses.Get(ctx, id, responses.ResponseGetParams{})
		wantAPIError(t, "bob get "+id, err, 404, want)
		wantAPIError(t, "bob delete "+id, bob.Responses.Delete(ctx, id), 404, want)
		_, err = bob.Responses.InputItems.List(ctx, id, responses.InputItemListParams{})
		wantAPIError(t, "bob input items "+id, err, 404, want)
		_, err = bob.Responses.Cancel(ctx, id)
		wantAPIError(t, "bob cancel "+id, err, 404, want)
		_, err = newResponse(t, bob, "fake/gpt-fake", id)
		wantAPIError(t, "bob continues "+id, err, 400, `previous_response_id "`+id+`" is not a response of this agent`)
	}
	if n := len(p.up.requests()); n != before {
		t.Fatalf("another agent's requests reached the provider (%d)", n-before)
	}
	// The owner, at another provider: refused, naming both.
	_, err = newResponse(t, alice, "fake2/gpt-fake", "resp_1")
	wantAPIError(t, "alice continues at fake2", err, 400,
		`previous_response_id "resp_1" is stored by provider fake, but this request is routed to provider fake2`)
	if n := len(p.up.requests()); n != before {
		t.Fatal("a refused continuation reached the provider")
	}

	// The owner reads, lists, continues from and deletes it.
	got, err := alice.Responses.Get(ctx, "resp_1", responses.ResponseGetParams{Include: []responses.ResponseIncludable{"message.output_text.logprobs"}})
	if err != nil || got.ID != "resp_1" || got.OutputText() != "hello there" {
		t.Fatalf("alice get: %v %+v", err, got)
	}
	items, err := alice.Responses.InputItems.List(ctx, "resp_1", responses.InputItemListParams{
		After: openai.String("msg_0"), Limit: openai.Int(2), Order: responses.InputItemListParamsOrderAsc})
	if err != nil || len(items.Data) != 1 || items.Data[0].ID != "msg_in" {
		t.Fatalf("alice input items: %v %+v", err, items)
	}
	next, err := newResponse(t, alice, "fake/gpt-fake", "resp_1")
	if err != nil || next.ID != "resp_3" {
		t.Fatalf("alice continues: %v %+v", err, next)
	}
	replay := alice.Responses.GetStreaming(ctx, "resp_2", responses.ResponseGetParams{})
	var events []string
	for replay.Next() {
		events = append(events, replay.Current().Type)
	}
	if err := replay.Err(); err != nil || strings.Join(events, " ") != "response.created response.completed" {
		t.Fatalf("alice replays a stream: %v %q", err, events)
	}
	cancelled, err := alice.Responses.Cancel(ctx, "resp_2")
	if err != nil || cancelled.Status != "cancelled" {
		t.Fatalf("alice cancel: %v %+v", err, cancelled)
	}
	if err := alice.Responses.Delete(ctx, "resp_1"); err != nil {
		t.Fatalf("alice delete: %v", err)
	}
	up := p.up.requests()[before:]
	want := []struct{ method, path, query string }{
		{"GET", "/v1/responses/resp_1", "include%5B%5D=message.output_text.logprobs"},
		{"GET", "/v1/responses/resp_1/input_items", "after=msg_0&limit=2&order=asc"},
		{"POST", "/v1/responses", ""},
		{"GET", "/v1/responses/resp_2", ""},
		{"POST", "/v1/responses/resp_2/cancel", ""},
		{"DELETE", "/v1/responses/resp_1", ""},
	}
	if len(up) != len(want) {
		t.Fatalf("upstream saw %d requests, want %d: %+v", len(up), len(want), up)
	}
	for i, w := range want {
		if up[i].Path != w.path || up[i].Query != w.query {
			t.Errorf("upstream request %d: %s?%s, want %s?%s", i, up[i].Path, up[i].Query, w.path, w.query)
		}
		if up[i].Header.Get("Authorization") != "Bearer "+providerKey {
			t.Errorf("upstream request %d: Authorization %q", i, up[i].Header.Get("Authorization"))
		}
		assertNoAgentCredential(t, up[i])
	}
	if string(up[3].Body) != `{"stream":true}` || up[3].Header.Get("Content-Type") != "application/json" {
		t.Errorf("the replay's body %q (%s) was not relayed", up[3].Body, up[3].Header.Get("Content-Type"))
	}
	if len(up[0].Body) != 0 || up[0].Header.Get("Content-Type") != "" {
		t.Errorf("a GET without a body went upstream with %q (%s)", up[0].Body, up[0].Header.Get("Content-Type"))
	}

	// Deleted: forgotten, so cllama answers without asking the provider.
	_, err = alice.Responses.Get(ctx, "resp_1", responses.ResponseGetParams{})
	wantAPIError(t, "get after delete", err, 404, `response "resp_1" not found`)
	if n := len(p.up.requests()); n != before+len(want) {
		t.Error("a forgotten id was asked of the provider")
	}
	if _, ok := p.srv.owners.Owner("resp_1"); ok {
		t.Error("resp_1 is still owned after its deletion")
	}

	// Audited with the route, as the format's: the owner's read as request
	// and response, the other agent's as an error.
	var sawRead, sawRefusal bool
	for _, e := range p.audit.events(t) {
		if e.Route == "GET /v1/responses/resp_1" && e.ClawID == "alice" && e.Format == "responses" && e.Type == audit.TypeResponse && e.StatusCode == 200 {
			sawRead = true
		}
		if e.Route == "DELETE /v1/responses/resp_1" && e.ClawID == "bob" && e.Type == audit.TypeError && e.StatusCode == 404 {
			sawRefusal = true
		}
	}
	if !sawRead || !sawRefusal {
		t.Errorf("audit: read %v, refusal %v in %+v", sawRead, sawRefusal, p.audit.events(t))
	}
}

// A streamed response is its creator's from the event that announces it:
// the runner can read it back before the stream has ended.
func TestStreamedResponseOwnedOnceAnnounced(t *testing.T) {
	p, sp := newStoredPod(t)
	sp.mu.Lock()
	sp.hold = make(chan struct{})
	sp.mu.Unlock()
	resp := p.post(t, pathResponses, `{"model":"fake/gpt-fake","input":"hi","stream":true}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	buf := make([]byte, 4096)
	n, err := resp.Body.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), `"id":"resp_1"`) {
		t.Fatalf("first event: %v %q", err, buf[:n])
	}
	alice := openAIClient(p, aliceToken)
	_, err = alice.Responses.Get(context.Background(), "resp_1", responses.ResponseGetParams{})
	close(sp.hold)
	if err != nil {
		t.Fatalf("reading a response whose stream is under way: %v", err)
	}
	if rest := readAll(t, resp.Body); !strings.Contains(rest, "response.completed") {
		t.Fatalf("rest of the stream %q", rest)
	}
}

// Who owns what survives a restart of cllama (the log in its state
// directory).
func TestOwnershipSurvivesRestart(t *testing.T) {
	p, _ := newStoredPod(t, func(c *Config, _ *Options) { c.StateDir = filepath.Join(t.TempDir(), "state") })
	if _, err := newResponse(t, openAIClient(p, aliceToken), "fake/gpt-fake", ""); err != nil {
		t.Fatal(err)
	}
	if err := p.srv.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := p.srv.Config()
	rec, _ := openRecorder(t, cfg, p.audit)
	srv, err := New(cfg, Options{Recorder: rec, AgentCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	front := httptest.NewServer(srv)
	t.Cleanup(front.Close)
	restarted := &pod{up: p.up, srv: srv, front: front, audit: p.audit, root: p.root}
	ctx := context.Background()
	alice, bob := openAIClient(restarted, aliceToken), openAIClient(restarted, bobToken)
	got, err := alice.Responses.Get(ctx, "resp_1", responses.ResponseGetParams{})
	if err != nil || got.ID != "resp_1" {
		t.Fatalf("owner after restart: %v %+v", err, got)
	}
	_, err = bob.Responses.Get(ctx, "resp_1", responses.ResponseGetParams{})
	wantAPIError(t, "other agent after restart", err, 404, `response "resp_1" not found`)
	if _, err := newResponse(t, alice, "fake/gpt-fake", "resp_1"); err != nil {
		t.Fatalf("continuing after restart: %v", err)
	}
}

// CLLAMA_STORED_IDS_MAX: past the bound the oldest ids are forgotten.
func TestStoredIDsBound(t *testing.T) {
	p, _ := newStoredPod(t, func(c *Config, _ *Options) { c.StoredIDsMax = 2 })
	alice := openAIClient(p, aliceToken)
	for range 3 {
		if _, err := newResponse(t, alice, "fake/gpt-fake", ""); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	_, err := alice.Responses.Get(ctx, "resp_1", responses.ResponseGetParams{})
	wantAPIError(t, "oldest", err, 404, `response "resp_1" not found`)
	for _, id := range []string{"resp_2", "resp_3"} {
		if _, err := alice.Responses.Get(ctx, id, responses.ResponseGetParams{}); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

// A mediated turn records the response it answers with through the
// exchange's Created hook, which only formats with stored objects have.
func TestMediatorRecordsThroughCreated(t *testing.T) {
	p, _ := newStoredPod(t, func(_ *Config, o *Options) {
		o.Mediator = mediatorFunc(func(w http.ResponseWriter, r *http.Request, x *exchange.Exchange) {
			if x.Format != formatResponses {
				if x.Created != nil {
					t.Errorf("Created hook on a %s exchange", x.Format)
				}
				w.WriteHeader(200)
				return
			}
			if x.Created == nil {
				t.Error("no Created hook on a responses exchange")
				return
			}
			x.Created("resp_mediated")
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, responseJSON("resp_mediated", "completed"))
		})
	})
	writeFile(t, filepath.Join(p.root, "alice", "tools.json"), managedTools)
	if _, err := newResponse(t, openAIClient(p, aliceToken), "fake/gpt-fake", ""); err != nil {
		t.Fatal(err)
	}
	if o, ok := p.srv.owners.Owner("resp_mediated"); !ok || o != (owners.Owner{Agent: "alice", Provider: "fake"}) {
		t.Fatalf("owner %+v %v", o, ok)
	}
	if resp := p.post(t, pathChat, requestBody(formatOpenAI, "fake", false)); resp.StatusCode != 200 {
		t.Fatalf("chat: %d", resp.StatusCode)
	}
}

// Object routes authenticate like the model routes, answer a wrong method
// with 405 and Allow, and leave other subpaths to the family's 404.
func TestObjectRoutesEdges(t *testing.T) {
	p, _ := newStoredPod(t)
	do := func(method, path string, headers ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, p.front.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := p.front.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp, readAll(t, resp.Body)
	}
	for _, c := range []struct {
		name    string
		headers []string
		status  int
	}{
		{"missing credentials", nil, 401},
		{"malformed credentials", []string{"Authorization", "Bearer alice"}, 401},
		{"unknown agent", []string{"Authorization", "Bearer mallory:s3cret-alice"}, 403},
		{"wrong secret", []string{"Authorization", "Bearer alice:nope"}, 403},
	} {
		resp, body := do("GET", "/v1/responses/resp_1", c.headers...)
		model := p.post(t, pathResponses, `{"model":"fake/m"}`, append([]string{"Authorization", ""}, c.headers...)...)
		if want := readAll(t, model.Body); resp.StatusCode != c.status || body != want {
			t.Errorf("%s: %d %s; the model route answers %d %s", c.name, resp.StatusCode, body, model.StatusCode, want)
		}
	}
	auth := []string{"Authorization", "Bearer " + aliceToken}
	for _, c := range []struct {
		method, path string
		status       int
		allow, msg   string
	}{
		{"PUT", "/v1/responses/resp_1", 405, "GET, DELETE", "use GET or DELETE /v1/responses/resp_1"},
		{"POST", "/v1/responses/resp_1", 405, "GET, DELETE", ""},
		{"GET", "/v1/responses/resp_1/cancel", 405, "POST", "use POST /v1/responses/resp_1/cancel"},
		{"GET", "/v1/responses/resp_1/unknown", 404, "", "no route for GET"},
		{"GET", "/v1/responses/", 404, "", "no route for GET"},
		{"GET", "/v1/responses/../input_items", 404, "", "no route for GET"},
		{"GET", "/v1/responses/./input_items", 404, "", "no route for GET"},
		{"GET", "/v1/responses/a%2Fb", 404, "", "no route for GET"},
		{"GET", "/v1/responses", 405, "POST", "use POST /v1/responses"},
	} {
		resp, body := do(c.method, c.path, auth...)
		_, msg := apiErr(t, formatOpenAI, body)
		if resp.StatusCode != c.status || resp.Header.Get("Allow") != c.allow || !strings.Contains(msg, c.msg) {
			t.Errorf("%s %s: %d Allow %q %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), body)
		}
	}
	if n := len(p.up.requests()); n != 0 {
		t.Fatalf("%d requests reached the provider", n)
	}
	// An id is one path segment upstream too, whatever it holds.
	const odd = "resp a?b#c"
	if err := p.srv.owners.Record(odd, owners.Owner{Agent: "alice", Provider: "fake"}); err != nil {
		t.Fatal(err)
	}
	resp, body := do("GET", "/v1/responses/resp%20a%3Fb%23c/input_items?limit=1", auth...)
	up := p.up.requests()
	if len(up) != 1 || up[0].Path != "/v1/responses/"+odd+"/input_items" || up[0].Query != "limit=1" {
		t.Fatalf("upstream saw %+v (answer %d %s)", up, resp.StatusCode, body)
	}
}

// The provider's errors on an object route are relayed as they came, and
// an unreachable provider is a 502 in the format's shape.
func TestObjectRouteUpstreamErrors(t *testing.T) {
	p, _ := newStoredPod(t, func(c *Config, _ *Options) { c.FirstByteTimeout = 200 * time.Millisecond })
	alice := openAIClient(p, aliceToken)
	if err := p.srv.owners.Record("resp_gone", owners.Owner{Agent: "alice", Provider: "fake"}); err != nil {
		t.Fatal(err)
	}
	_, err := alice.Responses.Get(context.Background(), "resp_gone", responses.ResponseGetParams{})
	wantAPIError(t, "provider's 404", err, 404, "No response found with id 'resp_gone'.")
	p.up.setHandler(func(w http.ResponseWriter, r *http.Request) { time.Sleep(time.Second) })
	_, err = alice.Responses.Get(context.Background(), "resp_gone", responses.ResponseGetParams{})
	wantAPIError(t, "first byte timeout", err, 504, "provider fake did not answer")
}

func FuzzMatchObject(f *testing.F) {
	for _, s := range []string{"/v1/responses/resp_1", "/v1/responses/resp_1/input_items", "/v1/responses/", "/v1/responses/..",
		"/v1/responses//input_items", "/v1/responses/a/b", "/v1/responses/./cancel", "/v1/responses/resp_1/input_items/x"} {
		f.Add(s)
	}
	routes := []struct{ prefix, suffix, upstream string }{
		{"/v1/responses/", "", "/responses/{id}"},
		{"/v1/responses/", "/input_items", "/responses/{id}/input_items"},
	}
	f.Fuzz(func(t *testing.T, p string) {
		matched := 0
		for _, r := range routes {
			id, ok := matchObject(r.prefix, r.suffix, p)
			if !ok {
				continue
			}
			matched++
			if id == "" || id == "." || id == ".." || strings.Contains(id, "/") {
				t.Fatalf("%q: matched id %q", p, id)
			}
			if r.prefix+id+r.suffix != p {
				t.Fatalf("%q: id %q does not rebuild the path", p, id)
			}
			up := upstreamObjectPath(r.upstream, id)
			if strings.Count(up, "/") != strings.Count(r.upstream, "/") || strings.ContainsAny(up, "?#") {
				t.Fatalf("%q: upstream path %q is not one segment for the id", p, up)
			}
		}
		if matched > 1 {
			t.Fatalf("%q matched %d routes", p, matched)
		}
	})
}
