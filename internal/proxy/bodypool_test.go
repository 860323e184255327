package proxy

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A transport may go on reading a request's body after RoundTrip has
// returned the response, until it closes the body (the RoundTripper
// contract; Go's does when a provider answers before reading the request).
// The body's buffer is not used for another request until then: the
// provider is sent each request's own bytes, never the next one's.
func TestPooledBodyIsNotReusedWhileTheTransportReadsIt(t *testing.T) {
	const size = 256 << 10
	received := make(chan []byte, 16)
	late := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		go func() {
			// The exchange has ended, and the next request has been
			// read, by the time this reads the body.
			time.Sleep(30 * time.Millisecond)
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
			}
			_ = r.Body.Close()
			received <- body
		}()
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(openAIJSON)), ContentLength: int64(len(openAIJSON)), Request: r}, nil
	})
	p := newPod(t, func(_ *Config, o *Options) { o.Transport = late })
	request := func(fill string) {
		body := `{"model":"fake/m","messages":[{"role":"user","content":"` + strings.Repeat(fill, size) + `"}]}`
		resp := p.post(t, pathChat, body)
		if got := readAll(t, resp.Body); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, got)
		}
	}
	for i := range 4 {
		request("x")
		request("z")
		// One request of x's and one of z's, each whole.
		seen := map[string]int{}
		for range 2 {
			body := <-received
			x, z := bytes.Count(body, []byte("x")), bytes.Count(body, []byte("z"))
			seen[fmt.Sprintf("%d x's and %d z's", x, z)]++
		}
		want := map[string]int{fmt.Sprintf("%d x's and 0 z's", size): 1, fmt.Sprintf("0 x's and %d z's", size): 1}
		if !maps.Equal(seen, want) {
			t.Fatalf("round %d: the provider was sent requests of %v; want one of each %v", i, seen, want)
		}
	}
}

// The holders of a pooled body: the handler that read it and every reader
// handed to the transport. Reading after the close fails rather than
// reading a buffer that may be in use again.
func TestHeldReaderHoldsTheBodyUntilClosed(t *testing.T) {
	pb := getBody(poolMinBody)
	if pb == nil || len(pb.b) != poolMinBody {
		t.Fatalf("getBody(%d) = %v", poolMinBody, pb)
	}
	copy(pb.b, "abc")
	r := newHeldReader(bytes.NewReader(pb.b[:3]), pb)
	pb.drop() // the handler is done
	if got := pb.refs.Load(); got != 1 {
		t.Fatalf("after the handler's drop, %d holders; want the reader's", got)
	}
	buf := make([]byte, 8)
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "abc" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	_ = r.Close()
	_ = r.Close() // a second close drops nothing more
	if got := pb.refs.Load(); got != 0 {
		t.Fatalf("after the close, %d holders", got)
	}
	if _, err := r.Read(buf); err != errReadAfterClose {
		t.Fatalf("read after close: %v", err)
	}
}

func TestBodyClasses(t *testing.T) {
	for _, tc := range []struct{ n, class int }{
		{poolMinBody, 0}, {poolMinBody + 1, 1}, {2 * poolMinBody, 1}, {200 << 10, 2}, {poolMaxBody, 7},
	} {
		if got := bodyClass(tc.n); got != tc.class || poolMinBody<<got < tc.n {
			t.Errorf("bodyClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
	}
	for _, n := range []int64{poolMinBody - 1, poolMaxBody + 1} {
		if pb := getBody(n); pb != nil {
			t.Errorf("getBody(%d) pooled", n)
		}
	}
}
