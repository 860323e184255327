package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// FuzzServerBytes has a server answer every request with the fuzz input
// and checks the transport against http.ReadResponse reading the same
// bytes (readLikeTransport).
//
// With closeAfter the server closes once it has written them, so the
// transport always reaches an end: it must then agree with
// readLikeTransport exactly, on success or failure, status and body.
//
// Without, the server keeps the connection open. Where readLikeTransport
// needed no more than the input, the transport has all it needs too and
// must agree exactly, twice over (the second call on the kept connection
// when there is one). Where it needed more, the call waits for its short
// deadline; it is made anyway, for the cancel paths it takes.
func FuzzServerBytes(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-Sum: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\ntoo long",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
		"HTTP/1.0 200 OK\r\n\r\nold style",
		"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno",
		"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 200\r\n\r\n",
		"HTTP/1.1 200 OK\r\n",
		"SSH-2.0-OpenSSH_9.6\r\n",
		"\x00\x01\x02garbage",
		"",
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	// One transport for the whole run, as a program has: each input gets
	// a server of its own, and its connections are closed at the end.
	tr := &Transport{Fallback: fuzzNoFallback{}}
	f.Fuzz(func(t *testing.T, data []byte, closeAfter bool) {
		if len(data) > 16<<10 {
			return // the point is the parsing, not the volume
		}
		srv := answering(t, string(data), !closeAfter)
		defer tr.CloseIdleConnections()

		wantStatus, wantBody, needMore, wantErr := readLikeTransport(data)
		check := func(status int, body []byte, err error) {
			t.Helper()
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("transport: %v; http.ReadResponse: %v", err, wantErr)
			}
			if err == nil && (status != wantStatus || !bytes.Equal(body, wantBody)) {
				t.Fatalf("transport: %d %q; http.ReadResponse: %d %q", status, body, wantStatus, wantBody)
			}
		}
		switch {
		case closeAfter:
			status, body, err := fuzzCall(tr, srv.url, 20*time.Second)
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the call did not end although the server closed: %v", err)
			}
			check(status, body, err)
		case !needMore:
			for range 2 {
				status, body, err := fuzzCall(tr, srv.url, 20*time.Second)
				if errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the call waited for more than the input: %v", err)
				}
				check(status, body, err)
			}
		default:
			if status, body, err := fuzzCall(tr, srv.url, 5*time.Millisecond); err == nil {
				check(status, body, err)
			}
		}
	})
}

type fuzzNoFallback struct{}

func (fuzzNoFallback) RoundTrip(*http.Request) (*http.Response, error) {
	panic("a plain http GET went to Fallback")
}

// fuzzCall makes one GET through tr and reads the whole body, all within
// limit.
func fuzzCall(tr *Transport, url string, limit time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

// readLikeTransport reads data as the transport reads a connection's
// bytes: http.ReadResponse, skipping up to five informational responses,
// refusing an unasked 101, and reading the body to its end. needMore
// reports whether it read up to the end of data, where the transport,
// reading from a connection kept open, would wait.
func readLikeTransport(data []byte) (status int, body []byte, needMore bool, err error) {
	r := &endReader{data: data}
	status, body, err = readResponses(r)
	return status, body, r.hitEnd, err
}

func readResponses(r io.Reader) (int, []byte, error) {
	req, _ := http.NewRequest("GET", "http://fuzz.invalid/", nil)
	br := bufio.NewReaderSize(r, size(0))
	for range maxInformational + 1 {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return 0, nil, err
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return 0, nil, errors.New("101")
		}
		if resp.StatusCode >= 200 || resp.StatusCode < 100 {
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return 0, nil, err
			}
			return resp.StatusCode, body, nil
		}
	}
	return 0, nil, errors.New("too many informational responses")
}

// endReader reads data, then EOF, noting whether anything asked past it.
type endReader struct {
	data   []byte
	hitEnd bool
}

func (e *endReader) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		e.hitEnd = true
		return 0, io.EOF
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}
