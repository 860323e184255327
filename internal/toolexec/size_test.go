package toolexec

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// original_bytes must never be a size cllama did not measure: a body
// longer than it is willing to drain is reported with
// original_bytes_at_least, unless Content-Length declared its size.
func TestOriginalBytesOfLongBodies(t *testing.T) {
	const limit = 64 << 10 // drain bound: 16 x 64 KiB = 1 MiB past the read
	e := New(Options{MaxResponseBytes: limit})
	defer e.Close()
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	// body writes size bytes; chunked unless declared, and every gap
	// after the first limit+1 bytes sleeps that long.
	body := func(size int, declared bool, gap time.Duration) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, r *http.Request, _ int) {
			w.Header().Set("Content-Type", "text/plain")
			if declared {
				w.Header().Set("Content-Length", strconv.Itoa(size))
			}
			rc := http.NewResponseController(w)
			for sent := 0; sent < size; {
				n := min(len(chunk), size-sent)
				if _, err := w.Write(chunk[:n]); err != nil {
					return
				}
				sent += n
				if gap > 0 && sent > limit {
					_ = rc.Flush()
					select {
					case <-time.After(gap):
					case <-r.Context().Done():
						return
					}
				}
			}
		}
	}
	for _, c := range []struct {
		name        string
		size        int
		declared    bool
		gap         time.Duration
		wantExact   int // original_bytes
		wantAtLeast int // original_bytes_at_least
	}{
		{"chunked, drained to its end", 512 << 10, false, 0, 512 << 10, 0},
		{"chunked, longer than the drain bound", 8 << 20, false, 0, 0, limit + 1 + 16*limit + 1},
		{"declared, longer than the drain bound", 8 << 20, true, 0, 8 << 20, 0},
		{"declared, drained to its end", 512 << 10, true, 0, 512 << 10, 0},
		{"chunked, too slow to drain", 512 << 10, false, 400 * time.Millisecond, 0, -1},
		{"declared, too slow to drain", 512 << 10, true, 400 * time.Millisecond, 512 << 10, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := newService(t, body(c.size, c.declared, c.gap))
			start := time.Now()
			env := e.Run(context.Background(), Call{AgentID: "a", Tool: httpTool(svc.URL, "GET", "/x", ""), Timeout: 20 * time.Second, MaxResultBytes: 1000})
			took := time.Since(start)
			wantOK(t, env)
			if !env.Truncated || env.OriginalBytes != c.wantExact {
				t.Fatalf("envelope %s: want original_bytes %d", mustJSON(env), c.wantExact)
			}
			switch {
			case c.wantAtLeast >= 0 && env.OriginalBytesAtLeast != c.wantAtLeast:
				t.Fatalf("original_bytes_at_least = %d, want %d", env.OriginalBytesAtLeast, c.wantAtLeast)
			case c.wantAtLeast < 0 && (env.OriginalBytesAtLeast <= limit || env.OriginalBytesAtLeast >= c.size):
				t.Fatalf("original_bytes_at_least = %d, want a count between %d and %d", env.OriginalBytesAtLeast, limit, c.size)
			}
			if env.OriginalBytes > c.size || env.OriginalBytesAtLeast > c.size {
				t.Fatalf("reported more than the %d bytes sent: %s", c.size, mustJSON(env))
			}
			if took > drainTimeout+3*time.Second {
				t.Errorf("the call took %s; the drain is bounded by %s", took, drainTimeout)
			}
			whole, _ := json.Marshal(env)
			if len(whole) > 1000 {
				t.Errorf("envelope is %d bytes, over the 1000-byte bound", len(whole))
			}
		})
	}
}
