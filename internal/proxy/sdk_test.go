package proxy

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
)

// The official SDK clients, configured as a user would (base URL, the
// agent's token as API key), must parse what cllama relays and what it
// says when it refuses.

func openAIClient(p *pod, key string) openai.Client {
	return openai.NewClient(ooption.WithBaseURL(p.front.URL+"/v1"), ooption.WithAPIKey(key), ooption.WithMaxRetries(0))
}

func anthropicClient(p *pod, key string) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(p.front.URL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0))
}

func openAIParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
}

func anthropicParams(model string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}
}

func TestOpenAISDK(t *testing.T) {
	p := newPod(t)
	c := openAIClient(p, aliceToken)
	ctx := context.Background()

	res, err := c.Chat.Completions.New(ctx, openAIParams("fake/gpt-fake"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != "hello there" || res.Usage.PromptTokens != 11 {
		t.Fatalf("%+v", res)
	}

	params := openAIParams("fake/gpt-fake")
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "hello there" || acc.Usage.CompletionTokens != 3 {
		t.Fatalf("accumulated %+v", acc.ChatCompletion)
	}
	up := p.up.requests()
	if len(up) != 2 || !strings.Contains(string(up[1].Body), `"model":"gpt-fake"`) {
		t.Fatalf("upstream saw %v", up)
	}
	for _, r := range up {
		assertNoAgentCredential(t, r)
	}
}

func TestAnthropicSDK(t *testing.T) {
	p := newPod(t)
	c := anthropicClient(p, aliceToken) // sends the token as x-api-key
	ctx := context.Background()

	msg, err := c.Messages.New(ctx, anthropicParams("fakeant/claude-fake"))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "hello there" || msg.Usage.InputTokens != 11 {
		t.Fatalf("%+v", msg)
	}

	stream := c.Messages.NewStreaming(ctx, anthropicParams("fakeant/claude-fake"))
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != "hello there" || acc.StopReason != "end_turn" || acc.Usage.OutputTokens != 3 {
		t.Fatalf("accumulated %+v", acc)
	}
	for _, r := range p.up.requests() {
		assertNoAgentCredential(t, r)
		if r.Header.Get("Anthropic-Version") == "" || r.Header.Get("X-Api-Key") != providerKey {
			t.Fatalf("upstream headers %v", r.Header)
		}
	}
}

func TestSDKsParseProxyErrors(t *testing.T) {
	p := newPod(t)
	ctx := context.Background()

	bad, good, ant := openAIClient(p, "alice:wrong"), openAIClient(p, aliceToken), anthropicClient(p, aliceToken)
	_, err := bad.Chat.Completions.New(ctx, openAIParams("fake/gpt-fake"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusForbidden || !strings.Contains(oe.Message, "invalid credentials") {
		t.Fatalf("openai error %v", err)
	}
	_, err = good.Chat.Completions.New(ctx, openAIParams("nope/gpt"))
	if !errors.As(err, &oe) || oe.StatusCode != 400 || !strings.Contains(oe.Message, "known providers") {
		t.Fatalf("openai error %v", err)
	}

	_, err = ant.Messages.New(ctx, anthropicParams("claude-without-provider"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Error(), "<provider>/<model>") {
		t.Fatalf("anthropic error %v", err)
	}
}

func TestSDKsSeeInBandStreamErrors(t *testing.T) {
	for _, f := range testFormats {
		p := newPod(t)
		p.up.setHandler(streamThenFail(f, func(http.ResponseWriter, *http.Request) {}))
		ctx := context.Background()
		var err error
		if f == formatAnthropic {
			c := anthropicClient(p, aliceToken)
			s := c.Messages.NewStreaming(ctx, anthropicParams("fake/claude-fake"))
			for s.Next() {
			}
			err = s.Err()
		} else {
			c := openAIClient(p, aliceToken)
			s := c.Chat.Completions.NewStreaming(ctx, openAIParams("fake/gpt-fake"))
			for s.Next() {
			}
			err = s.Err()
		}
		if err == nil || !strings.Contains(err.Error(), "before it finished") {
			t.Fatalf("%s: stream error %v", f, err)
		}
	}
}
