package proxy

import (
	"net"
	"net/http"
	"time"

	"github.com/clawdapus/clawgo/internal/h1"
)

// NewTransport returns the pooled transport cllama uses for upstream calls.
// Go's default keeps two idle connections per host, which under a pod's
// concurrency means a new TLS handshake for most requests; every agent of a
// pod talks to the same few providers, so keep many warm connections per
// host. ResponseHeaderTimeout is left unset: the proxy bounds the first
// byte per request (Config.FirstByteTimeout) so the error can be reported
// in the endpoint's format.
//
// Cleartext upstreams (a model server or service in the pod) are called
// through h1, which works on the caller's goroutine; https upstreams, and
// any call the proxy environment sends through a proxy, through net/http
// (HTTP/2 where the provider offers it).
//
// client is Config.UpstreamClient: with UpstreamNetHTTP every call goes
// through net/http.
func NewTransport(client string) *h1.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &h1.Transport{
		Disabled:               client == UpstreamNetHTTP,
		Fallback:               newHTTPTransport(d),
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            d.DialContext,
		MaxIdleConnsPerHost:    256,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

func newHTTPTransport(d *net.Dialer) *http.Transport {
	return &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    256,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		ReadBufferSize:         32 << 10,
		WriteBufferSize:        32 << 10,
		MaxResponseHeaderBytes: 1 << 20,
	}
}
