package mediate

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestBehindTheProxy runs a mediated turn through the real cllama edge:
// compiled context files on disk, the agent's bearer, provider routing and
// model rewrite, then the Mediator, with the official SDK clients.
func TestBehindTheProxy(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			up := newUpstream(t, k)
			svc := newServices(t)
			dir := t.TempDir()
			root, histDir := filepath.Join(dir, "context"), filepath.Join(dir, "history")
			write := func(path string, v any) {
				t.Helper()
				b, ok := v.([]byte)
				if !ok {
					b = mustJSON(v)
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write(filepath.Join(root, "alice", "metadata.json"), map[string]any{"token": "alice:s3cret", "pod": "desk"})
			write(filepath.Join(root, "alice", "tools.json"), toolsManifest(svc.srv.URL, manifest.Policy{}))
			write(filepath.Join(root, "alice", "service-auth", "svc.json"), map[string]any{"service": "svc", "auth_type": "bearer", "token": "projected"})
			write(filepath.Join(dir, "auth", "providers.json"), map[string]any{"providers": map[string]any{
				"scripted": map[string]any{"base_url": up.srv.URL + "/v1", "api_key": "sk-up", "auth": "bearer"}}})

			hist, err := history.NewWriter(histDir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = hist.Close() })
			ex := toolexec.New(toolexec.Options{})
			t.Cleanup(func() { _ = ex.Close() })
			auditBuf := &syncBuffer{}
			logger := audit.New(auditBuf)
			rec := recorder.New(logger, hist)
			med, err := New(Options{Runner: ex, Recorder: rec, StateDir: filepath.Join(dir, "state")})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := proxy.New(proxy.Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth"), HistoryDir: histDir, Pod: "desk"},
				proxy.Options{Recorder: rec, Mediator: med, AgentCheckInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			front := httptest.NewServer(srv)
			t.Cleanup(front.Close)

			up.script = []step{{Calls: []tcall{call("c1", echo, `{"q":"via proxy"}`)}, Usage: u(4, 1)}, {Text: "through the edge", Usage: u(6, 2)}}
			ctx := context.Background()
			var text string
			switch k.format() {
			case "responses":
				c := openai.NewClient(option.WithBaseURL(front.URL+"/v1/"), option.WithAPIKey("alice:s3cret"), option.WithMaxRetries(0))
				s := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "scripted/up-model",
					Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
				for s.Next() {
					if ev := s.Current(); ev.Type == "response.completed" {
						text = ev.Response.OutputText()
					}
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
			case "openai":
				c := openai.NewClient(option.WithBaseURL(front.URL+"/v1/"), option.WithAPIKey("alice:s3cret"), option.WithMaxRetries(0))
				s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "scripted/up-model",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
				acc := openai.ChatCompletionAccumulator{}
				for s.Next() {
					acc.AddChunk(s.Current())
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				text = acc.Choices[0].Message.Content
			default:
				c := anthropic.NewClient(aoption.WithBaseURL(front.URL), aoption.WithAPIKey("alice:s3cret"), aoption.WithMaxRetries(0))
				s := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "scripted/up-model", MaxTokens: 64,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
				var msg anthropic.Message
				for s.Next() {
					_ = msg.Accumulate(s.Current())
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				text = msg.Content[0].Text
			}
			if text != "through the edge" {
				t.Fatalf("answer %q", text)
			}
			reqs := up.requests()
			if len(reqs) != 2 || !reqs[0].Stream {
				t.Fatalf("upstream requests %d", len(reqs))
			}
			var model struct{ Model string }
			_ = json.Unmarshal(reqs[0].Raw, &model)
			if model.Model != "up-model" {
				t.Errorf("upstream model %q", model.Model)
			}
			if svc.count("echo") != 1 || svc.auth["echo"] != "Bearer projected" {
				t.Errorf("service saw %d calls, auth %q", svc.count("echo"), svc.auth["echo"])
			}
			var entry history.Entry
			deadline := 500
			for ; deadline > 0; deadline-- {
				if f, err := os.Open(history.Path(histDir, "alice")); err == nil {
					sc := bufio.NewScanner(f)
					sc.Buffer(nil, 1<<20)
					for sc.Scan() {
						_ = json.Unmarshal(sc.Bytes(), &entry)
					}
					f.Close()
				}
				if entry.ID != "" {
					break
				}
				waitABit()
			}
			if entry.Status != "ok" || entry.Usage.TotalRounds != 2 || len(entry.ToolTrace) != 1 || entry.ToolTrace[0].ToolCalls[0].Name != "svc.echo" {
				t.Errorf("history entry %+v", entry)
			}
		})
	}
}
