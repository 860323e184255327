package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// dropsSecond is a raw server that answers the first request on each
// connection and reads the second one, then closes without answering:
// what a client sees when the server closes a kept connection just after
// the client checked it. It records every request body it read.
type dropsSecond struct {
	*rawServer
	mu     sync.Mutex
	bodies []string
}

func newDropsSecond(t *testing.T) *dropsSecond {
	d := &dropsSecond{}
	d.rawServer = newRawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for n := 0; ; n++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			b, err := io.ReadAll(req.Body)
			if err != nil {
				return
			}
			d.mu.Lock()
			d.bodies = append(d.bodies, req.Method+" "+string(b))
			d.mu.Unlock()
			if n == 1 {
				return // read, never answered
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
		}
	})
	return d
}

func (d *dropsSecond) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.bodies...)
}

// TestRepeatOnlyWhatMayBeRepeated: a request that got no byte of an
// answer on a kept connection is made again on a new one when a server
// may receive it twice (an idempotent method, an idempotency key), and
// not otherwise: a model call without a key is never sent twice.
func TestRepeatOnlyWhatMayBeRepeated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		key    string
		repeat bool
	}{
		{"GET", http.MethodGet, "", true},
		{"POST with an idempotency key", http.MethodPost, "k-1", true},
		{"POST", http.MethodPost, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newDropsSecond(t)
			tr := newTransport(t)
			first := newRequest(t, context.Background(), tc.method, srv.url, strings.NewReader("one"))
			do(t, tr, first)
			second := newRequest(t, context.Background(), tc.method, srv.url, strings.NewReader("two"))
			if tc.key != "" {
				second.Header.Set("Idempotency-Key", tc.key)
			}
			resp, err := tr.RoundTrip(second)
			got := srv.seen()
			if !tc.repeat {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("got %d, want an error: the request must not be sent twice", resp.StatusCode)
				}
				if want := []string{tc.method + " one", tc.method + " two"}; strings.Join(got, "|") != strings.Join(want, "|") {
					t.Fatalf("server saw %q, want %q", got, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("the repeat failed: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "ok" {
				t.Fatalf("body %q", b)
			}
			// The same body both times: the second copy came from GetBody.
			want := []string{tc.method + " one", tc.method + " two", tc.method + " two"}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("server saw %q, want %q", got, want)
			}
			if n := srv.accepted.Load(); n != 2 {
				t.Fatalf("%d connections, want 2 (the repeat on a new one)", n)
			}
		})
	}
}

// TestRepeatWhatWasNeverSent: a kept connection that refuses the first
// write of a request (nothing of it was sent) gets the request again on
// a new connection, whatever its method.
func TestRepeatWhatWasNeverSent(t *testing.T) {
	srv, _ := newServer(t, echo)
	var dials atomic.Int32
	var failNext atomic.Bool
	tr := newTransport(t)
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &refuser{Conn: c, fail: &failNext}, nil
	}
	do(t, tr, newRequest(t, context.Background(), http.MethodPost, srv.URL, strings.NewReader("one")))
	failNext.Store(true)
	resp, body := do(t, tr, newRequest(t, context.Background(), http.MethodPost, srv.URL, strings.NewReader("two")))
	if resp.StatusCode != 200 || string(body) != "two" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if n := dials.Load(); n != 2 {
		t.Fatalf("%d dials, want 2", n)
	}

	// Without GetBody the body cannot be had again: the error stands.
	failNext.Store(true)
	req := newRequest(t, context.Background(), http.MethodPost, srv.URL, io.MultiReader(strings.NewReader("three")))
	req.ContentLength = 5
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatal("a body that cannot be read again was sent twice")
	} else if !errors.Is(err, errRefused) {
		t.Fatalf("error %v, want the write's", err)
	}
}

var errRefused = errors.New("write refused")

// refuser is a connection whose next write, once fail is set, fails
// before a byte is written. Not a syscall.Conn, so the pool cannot look
// at it and uses it.
type refuser struct {
	net.Conn
	fail *atomic.Bool
}

func (r *refuser) Write(p []byte) (int, error) {
	if r.fail.CompareAndSwap(true, false) {
		return 0, errRefused
	}
	return r.Conn.Write(p)
}

// TestNoRepeatOnANewConnection: a request that fails on a connection of
// its own is not made again (the failure is the server's answer).
func TestNoRepeatOnANewConnection(t *testing.T) {
	var n atomic.Int32
	srv := newRawServer(t, func(c net.Conn) {
		n.Add(1)
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
	})
	tr := newTransport(t)
	if resp, err := tr.RoundTrip(newRequest(t, context.Background(), http.MethodGet, srv.url, nil)); err == nil {
		resp.Body.Close()
		t.Fatal("want an error")
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d connections, want 1", got)
	}
}
