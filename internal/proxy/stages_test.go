package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

const managedTools = `{"version":1,"tools":[{"name":"svc.lookup","description":"d","inputSchema":{"type":"object"},
"execution":{"transport":"http","service":"svc","base_url":"http://svc:80","method":"GET","path":"/x"}}]}`

type decoratorFunc func(ctx context.Context, x *exchange.Exchange) error

func (f decoratorFunc) Decorate(ctx context.Context, x *exchange.Exchange) error { return f(ctx, x) }

type mediatorFunc func(w http.ResponseWriter, r *http.Request, x *exchange.Exchange)

func (f mediatorFunc) Mediate(w http.ResponseWriter, r *http.Request, x *exchange.Exchange) {
	f(w, r, x)
}

func TestDecoratorRewritesBody(t *testing.T) {
	var seenX *exchange.Exchange
	p := newPod(t, func(_ *Config, o *Options) {
		o.Decorator = decoratorFunc(func(ctx context.Context, x *exchange.Exchange) error {
			seenX = x
			x.Body = bytes.Replace(x.Body, []byte(`"hi"`), []byte(`"FEED: calm seas\n\nhi"`), 1)
			return nil
		})
	})
	resp := p.post(t, pathChat, requestBody(formatOpenAI, "fake", false))
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	if up := p.up.requests()[0]; !strings.Contains(string(up.Body), "FEED: calm seas") || !strings.Contains(string(up.Body), `"model":"gpt-fake"`) {
		t.Fatalf("upstream body %s", up.Body)
	}
	if seenX.Agent.ID != "alice" || seenX.Provider != "fake" || seenX.UpstreamModel != "gpt-fake" || seenX.Pod != "test-pod" || seenX.ID == "" {
		t.Fatalf("exchange %+v", seenX)
	}
	if !strings.Contains(string(seenX.Original), `"model":"fake/gpt-fake"`) {
		t.Fatal("Original was modified")
	}
}

func TestDecoratorFailureIs500(t *testing.T) {
	p := newPod(t, func(_ *Config, o *Options) {
		o.Decorator = decoratorFunc(func(context.Context, *exchange.Exchange) error { return errors.New("boom") })
	})
	resp := p.post(t, pathMessages, requestBody(formatAnthropic, "fake", false))
	body := readAll(t, resp.Body)
	if _, msg := apiErr(t, formatAnthropic, body); resp.StatusCode != 500 || !strings.Contains(msg, "boom") {
		t.Fatal(resp.StatusCode, body)
	}
}

func TestManagedAgentGoesToMediator(t *testing.T) {
	var calls int
	p := newPod(t, func(_ *Config, o *Options) {
		o.Mediator = mediatorFunc(func(w http.ResponseWriter, r *http.Request, x *exchange.Exchange) {
			calls++
			// The mediator calls upstream through x.Send, as often as it needs.
			for range 2 {
				resp, err := x.Send(r.Context(), x.Body)
				if err != nil {
					apierror.New(502, apierror.TypeUpstream, err.Error()).Write(w, wireFormat(t, x.Format))
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			w.WriteHeader(299)
		})
	})
	writeFile(t, filepath.Join(p.root, "alice", "tools.json"), managedTools)
	resp := p.post(t, pathChat, requestBody(formatOpenAI, "fake", true))
	if resp.StatusCode != 299 || calls != 1 {
		t.Fatalf("status %d calls %d", resp.StatusCode, calls)
	}
	up := p.up.requests()
	if len(up) != 2 {
		t.Fatalf("upstream saw %d calls", len(up))
	}
	for _, r := range up {
		assertNoAgentCredential(t, r)
		if r.Header.Get("Authorization") != "Bearer "+providerKey {
			t.Fatal("Send did not apply provider auth")
		}
	}
	req := p.audit.waitEvent(t, audit.TypeRequest)
	if !req.Mediated || req.ManifestPresent == nil || !*req.ManifestPresent || *req.ToolsCount != 1 {
		t.Fatalf("request event %+v", req)
	}
	for _, e := range p.audit.events(t) {
		if e.Type == audit.TypeResponse {
			t.Fatal("proxy recorded a mediated exchange's response itself")
		}
	}
}

func TestManagedAgentWithoutMediatorPassesThrough(t *testing.T) {
	p := newPod(t)
	writeFile(t, filepath.Join(p.root, "alice", "tools.json"), managedTools)
	resp := p.post(t, pathChat, requestBody(formatOpenAI, "fake", false))
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	if e := p.audit.waitEvent(t, audit.TypeRequest); e.Mediated || *e.ToolsCount != 1 {
		t.Fatalf("%+v", e)
	}
}

func TestBrokenToolsManifestIs500(t *testing.T) {
	for _, f := range testFormats {
		t.Run(string(f), func(t *testing.T) {
			mediated := false
			p := newPod(t, func(_ *Config, o *Options) {
				o.Mediator = mediatorFunc(func(http.ResponseWriter, *http.Request, *exchange.Exchange) { mediated = true })
			})
			writeFile(t, filepath.Join(p.root, "alice", "tools.json"), `{"version":1,"tools":[{"name":"svc.x","inputSchema":{"type":"object"},"execution":{"transport":"ftp"}}]}`)
			resp := p.post(t, pathOf(f), requestBody(f, "fake", true))
			body := readAll(t, resp.Body)
			typ, msg := apiErr(t, f, body)
			if resp.StatusCode != 500 || typ != apierror.TypeManifest || !strings.Contains(msg, "tools.json") || !strings.Contains(msg, "tools[0].execution") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if mediated || len(p.up.requests()) != 0 {
				t.Fatal("a request with a broken manifest went on")
			}
			e := p.audit.waitEvent(t, audit.TypeManifestError)
			if e.ClawID != "alice" || !strings.Contains(e.Error, "tools.json") || e.StatusCode != 500 {
				t.Fatalf("%+v", e)
			}
		})
	}
}

// The runner learns which file and field are broken, never the values the
// operator wrote there: a broken tools.json holds service addresses, and
// those stay between cllama and the operator's audit log.
func TestBrokenToolsManifestKeepsServiceAddressesFromTheRunner(t *testing.T) {
	for _, f := range testFormats {
		t.Run(string(f), func(t *testing.T) {
			p := newPod(t, func(_ *Config, o *Options) {
				o.Mediator = mediatorFunc(func(http.ResponseWriter, *http.Request, *exchange.Exchange) {})
			})
			writeFile(t, filepath.Join(p.root, "alice", "tools.json"), `{"version":1,"tools":[{"name":"svc.x","inputSchema":{"type":"object"},"execution":{"transport":"http","service":"svc","base_url":"ftp://secret-svc.internal:9000/api","path":"/x"}}]}`)
			resp := p.post(t, pathOf(f), requestBody(f, "fake", false))
			body := readAll(t, resp.Body)
			_, msg := apiErr(t, f, body)
			if resp.StatusCode != 500 || !strings.Contains(msg, "tools[0].execution.base_url") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if strings.Contains(string(body), "secret-svc") {
				t.Fatalf("runner sees the service address: %s", body)
			}
			e := p.audit.waitEvent(t, audit.TypeManifestError)
			if !strings.Contains(e.Error, "secret-svc") {
				t.Fatalf("operator's event lacks the detail: %+v", e)
			}
		})
	}
}
