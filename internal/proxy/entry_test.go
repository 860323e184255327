package proxy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
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
