package feeds

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// The projected bearer is "a token the agent never sees" (README): a feed
// service that echoes its request into the feed must not put it in front
// of the model.
func TestFeedNeverShowsItsBearer(t *testing.T) {
	const token = "sa-token-0123456789abcdef"
	for _, f := range testFormats {
		t.Run(string(f), func(t *testing.T) {
			svc := newFeedService(t)
			svc.handle("/echo", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"you_sent":"`+r.Header.Get("Authorization")+`"}`)
			})
			svc.handle("/text", func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "debug: "+r.Header.Get("Authorization"))
			})
			d := New(Options{})
			agent := &agentctx.Agent{
				ID: "tiverton",
				Feeds: []manifest.Feed{
					{Name: "echo", Source: "b", URL: svc.URL + "/echo"},
					{Name: "text", Source: "b", URL: svc.URL + "/text", Auth: token},
				},
				ServiceAuth: map[string]*manifest.ServiceAuth{"b": {Service: "b", AuthType: "bearer", Token: token}},
			}
			text := decorate(t, d, f, agent)
			if strings.Contains(text, token) {
				t.Fatalf("feed text shows the bearer:\n%s", text)
			}
			if !strings.Contains(text, "you_sent") || !strings.Contains(text, "debug:") {
				t.Fatalf("feed content missing:\n%s", text)
			}
		})
	}
}
