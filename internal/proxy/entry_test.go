package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
)

// withDefaults makes "fake" the default provider and "fakeant" the
// pod's Anthropic-format provider.
func withDefaults(cfg *Config, _ *Options) {
	cfg.DefaultProvider = "fake"
	cfg.FormatProviders = map[string]string{"anthropic": "fakeant"}
}

// Runners send the model names they already use (issue 12 "Model names"):
// the official SDKs, bare names, streaming and not.
func TestSDKsSendBareModelNames(t *testing.T) {
	p := newPod(t, withDefaults)
	ctx := context.Background()

	ant := anthropicClient(p, aliceToken)
	msg, err := ant.Messages.New(ctx, anthropicParams("claude-sonnet-4-5"))
	if err != nil || msg.Content[0].Text != "hello there" {
		t.Fatalf("anthropic: %v %+v", err, msg)
	}
	stream := ant.Messages.NewStreaming(ctx, anthropicParams("claude-sonnet-4-6"))
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil || acc.Content[0].Text != "hello there" {
		t.Fatalf("anthropic stream: %v %+v", err, acc)
	}

	oa := openAIClient(p, aliceToken)
	res, err := oa.Chat.Completions.New(ctx, openAIParams("gpt-4o"))
	if err != nil || res.Choices[0].Message.Content != "hello there" {
		t.Fatalf("openai: %v %+v", err, res)
	}
	ostream := oa.Chat.Completions.NewStreaming(ctx, openAIParams("gpt-4o-mini"))
	for ostream.Next() {
	}
	if err := ostream.Err(); err != nil {
		t.Fatal(err)
	}

	up := p.up.requests()
	if len(up) != 4 {
		t.Fatalf("upstream saw %d requests", len(up))
	}
	want := []struct{ path, model, auth string }{
		{"/v1/messages", `"model":"claude-sonnet-4-5"`, "X-Api-Key"},
		{"/v1/messages", `"model":"claude-sonnet-4-6"`, "X-Api-Key"},
		{"/v1/chat/completions", `"model":"gpt-4o"`, "Authorization"},
		{"/v1/chat/completions", `"model":"gpt-4o-mini"`, "Authorization"},
	}
	for i, w := range want {
		if up[i].Path != w.path || !strings.Contains(string(up[i].Body), w.model) || !strings.Contains(up[i].Header.Get(w.auth), providerKey) {
			t.Errorf("upstream request %d: %s %s %v; want %+v", i, up[i].Path, up[i].Body, up[i].Header, w)
		}
		assertNoAgentCredential(t, up[i])
	}
	ev := p.audit.waitEvent(t, "response")
	if ev.Model != "claude-sonnet-4-5" {
		t.Errorf("audit recorded model %q", ev.Model)
	}
}

// Without a default provider, a bare name on chat completions is a 400
// that the SDK raises and that says how to declare one.
func TestBareModelWithoutDefaultSaysHowToDeclareOne(t *testing.T) {
	p := newPod(t)
	c := openAIClient(p, aliceToken)
	_, err := c.Chat.Completions.New(context.Background(), openAIParams("gpt-4o"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || !strings.Contains(oe.Message, "default-provider") || !strings.Contains(oe.Message, "known providers: fake, fakeant") {
		t.Fatalf("openai error %v", err)
	}
	if ev := p.audit.waitEvent(t, "error"); ev.StatusCode != 400 {
		t.Fatalf("audit %+v", ev)
	}
}

// A runner whose base URL ends in /v1 while its SDK adds /v1 itself calls
// /v1/v1/…: the 404 is in the SDK's own shape, says which base URL to
// configure, and is an audit error event.
func TestDoubledBaseURLIsExplained(t *testing.T) {
	p := newPod(t, withDefaults)
	ctx := context.Background()
	c := anthropic.NewClient(aoption.WithBaseURL(p.front.URL+"/v1"), aoption.WithAPIKey(aliceToken), aoption.WithMaxRetries(0))
	_, err := c.Messages.New(ctx, anthropicParams("claude-sonnet-4-5"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 || !strings.Contains(ae.Error(), "configure the base URL as "+p.front.URL+" (without /v1)") {
		t.Fatalf("anthropic error %v", err)
	}
	if !strings.Contains(ae.RawJSON(), `"type":"not_found_error"`) {
		t.Fatalf("not in the Anthropic shape: %s", ae.RawJSON())
	}
	ev := p.audit.waitEvent(t, "error")
	if ev.Format != "anthropic" || ev.StatusCode != 404 || ev.ClawID != "alice" || !strings.Contains(ev.Error, "repeats /v1") {
		t.Fatalf("audit %+v", ev)
	}
	if len(p.up.requests()) != 0 {
		t.Fatal("a refused request reached the upstream")
	}
}

// Unknown routes answer in their path family's shape.
func TestUnknownRoutesAnswerInTheirFamilysShape(t *testing.T) {
	p := newPod(t)
	for _, tc := range []struct{ path, shape string }{
		{"/v1/messages/batches", `{"type":"error","error":{"type":"not_found_error"`},
		{"/v1/embeddings", `{"error":{"message":`},
		{"/v1/v1/chat/completions", `{"error":{"message":`},
	} {
		resp := p.post(t, tc.path, `{}`)
		body := readAll(t, resp.Body)
		if resp.StatusCode != 404 || !strings.HasPrefix(body, tc.shape) {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, body)
		}
	}
	n := 0
	for _, e := range p.audit.events(t) {
		if e.Type == "error" && e.StatusCode == 404 {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d audit error events, want 3", n)
	}
}

// modelsUpstream answers GET /v1/models like a provider, and everything
// else as defaultProvider.
func modelsUpstream(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"model-a","object":"model"},{"id":"model-b","object":"model"}]}`)
		return
	}
	defaultProvider(w, r)
}

// Models.List of both SDKs: without an allow-list, the list of the
// provider their bare names go to, fetched with its key and cached.
func TestSDKsListModels(t *testing.T) {
	p := newPod(t, withDefaults)
	p.up.setHandler(modelsUpstream)
	ctx := context.Background()

	oa := openAIClient(p, aliceToken)
	for range 2 {
		page, err := oa.Models.List(ctx)
		if err != nil || len(page.Data) != 2 || page.Data[0].ID != "model-a" || page.Data[0].OwnedBy != "fake" {
			t.Fatalf("openai list: %v %+v", err, page)
		}
	}
	ant := anthropicClient(p, aliceToken)
	apage, err := ant.Models.List(ctx, anthropic.ModelListParams{})
	if err != nil || len(apage.Data) != 2 || apage.Data[1].ID != "model-b" {
		t.Fatalf("anthropic list: %v %+v", err, apage)
	}
	m, err := ant.Models.Get(ctx, "model-a", anthropic.ModelGetParams{})
	if err != nil || m.ID != "model-a" {
		t.Fatalf("anthropic get: %v %+v", err, m)
	}

	up := p.up.requests()
	if len(up) != 2 {
		t.Fatalf("upstream saw %d list requests, want one per provider (cached)", len(up))
	}
	if up[0].Header.Get("Authorization") != "Bearer "+providerKey || up[1].Header.Get("X-Api-Key") != providerKey {
		t.Fatalf("provider credentials not used: %v / %v", up[0].Header, up[1].Header)
	}
	for _, r := range up {
		assertNoAgentCredential(t, r)
	}

	// Authenticated like every route.
	bad := openAIClient(p, "alice:wrong")
	_, err = bad.Models.List(ctx)
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 403 {
		t.Fatalf("wrong token: %v", err)
	}
}

// With an allow-list, the agent's models are the list, as written.
func TestModelsListTheAllowList(t *testing.T) {
	p := newPod(t)
	writeFile(t, filepath.Join(p.root, "alice", "metadata.json"), `{"token":"`+aliceToken+`","models":["fake/gpt-4o","fakeant/claude-sonnet-4-5"]}`)
	ctx := context.Background()
	oa := openAIClient(p, aliceToken)
	page, err := oa.Models.List(ctx)
	if err != nil || len(page.Data) != 2 || page.Data[1].ID != "fakeant/claude-sonnet-4-5" {
		t.Fatalf("list: %v %+v", err, page)
	}
	m, err := oa.Models.Get(ctx, "fake/gpt-4o")
	if err != nil || m.ID != "fake/gpt-4o" {
		t.Fatalf("get: %v %+v", err, m)
	}
	_, err = oa.Models.Get(ctx, "fake/gpt-5")
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 404 {
		t.Fatalf("get of another model: %v", err)
	}
	if len(p.up.requests()) != 0 {
		t.Fatal("an allow-list needs no provider call")
	}
}

// A model outside the agent's allow-list is a 403 model_not_allowed in
// the endpoint's format, naming the allowed ones, and an audit error.
func TestModelOutsideAllowListIsRefused(t *testing.T) {
	p := newPod(t, withDefaults)
	writeFile(t, filepath.Join(p.root, "alice", "metadata.json"), `{"token":"`+aliceToken+`","models":["fake/gpt-4o","fakeant/claude-sonnet-4-5"]}`)
	ctx := context.Background()

	ant := anthropicClient(p, aliceToken)
	if _, err := ant.Messages.New(ctx, anthropicParams("claude-sonnet-4-5")); err != nil {
		t.Fatalf("allowed bare model: %v", err)
	}
	_, err := ant.Messages.New(ctx, anthropicParams("claude-opus-4-1"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 403 || !strings.Contains(ae.RawJSON(), `"type":"model_not_allowed"`) ||
		!strings.Contains(ae.Error(), "allowed models: fake/gpt-4o, fakeant/claude-sonnet-4-5") {
		t.Fatalf("anthropic: %v", err)
	}
	oa := openAIClient(p, aliceToken)
	if _, err := oa.Chat.Completions.New(ctx, openAIParams("gpt-4o")); err != nil {
		t.Fatalf("allowed bare model: %v", err)
	}
	_, err = oa.Chat.Completions.New(ctx, openAIParams("fake/gpt-5"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 403 || oe.Type != "model_not_allowed" {
		t.Fatalf("openai: %v", err)
	}
	if n := len(p.up.requests()); n != 2 {
		t.Fatalf("upstream saw %d requests, want the 2 allowed", n)
	}
	var refused []string
	for _, e := range p.audit.events(t) {
		if e.Type == "error" && e.StatusCode == 403 && e.ClawID == "alice" {
			refused = append(refused, e.Format)
		}
	}
	if strings.Join(refused, ",") != "anthropic,openai" {
		t.Fatalf("audited refusals %v", refused)
	}
}
