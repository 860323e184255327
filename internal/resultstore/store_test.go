package resultstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/testproc"
	"github.com/redis/go-redis/v9"
)

// clock is an injected clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// stores runs fn against every Store kind: files, memory, and Redis (when
// redis-server is installed).
func stores(t *testing.T, limits Limits, fn func(t *testing.T, s Store, c *clock)) {
	t.Run("files", func(t *testing.T) {
		c := newClock()
		s, err := OpenLocal(LocalOptions{Dir: t.TempDir(), Limits: limits, Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		fn(t, s, c)
	})
	t.Run("memory", func(t *testing.T) {
		c := newClock()
		s, err := OpenLocal(LocalOptions{Limits: limits, Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		fn(t, s, c)
	})
	t.Run("redis", func(t *testing.T) {
		c := newClock()
		fn(t, NewRedis(redisClient(t), RedisOptions{Pod: "p", Limits: limits, Now: c.now}), c)
	})
}

// redisClient starts a redis-server of the test's own, or skips when the
// binary is missing (.ci/run installs it).
func redisClient(tb testing.TB) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(testproc.Redis(tb))
	if err != nil {
		tb.Fatal(err)
	}
	rc := redis.NewClient(opt)
	tb.Cleanup(func() { _ = rc.Close() })
	return rc
}

func read(t *testing.T, s Store, scope Scope, h string) ([]byte, bool) {
	t.Helper()
	b, ok, err := s.Open(context.Background(), scope, h)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return nil, false
	}
	defer b.Close()
	out, err := io.ReadAll(io.NewSectionReader(b, 0, b.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return out, true
}

func put(t *testing.T, s Store, scope Scope, body []byte, ttl time.Duration) string {
	t.Helper()
	h, err := s.Put(context.Background(), scope, "svc.tool", body, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if !ValidHandle(h) {
		t.Fatalf("handle %q has no handle's shape", h)
	}
	return h
}

// A handle reads back its body for its agent and conversation only; any
// other scope, a made-up handle and a malformed one are all just unknown.
func TestHandleBoundToAgentAndConversation(t *testing.T) {
	stores(t, Limits{}, func(t *testing.T, s Store, _ *clock) {
		alice := Scope{Agent: "alice", Conversation: "mcp:s1"}
		body := bytes.Repeat([]byte("line of the report\n"), 1000)
		h := put(t, s, alice, body, time.Hour)
		got, ok := read(t, s, alice, h)
		if !ok || !bytes.Equal(got, body) {
			t.Fatalf("own handle: ok=%v, %d bytes, want %d", ok, len(got), len(body))
		}
		for _, sc := range []Scope{{Agent: "bob", Conversation: "mcp:s1"}, {Agent: "alice", Conversation: "mcp:s2"}} {
			if _, ok := read(t, s, sc, h); ok {
				t.Errorf("%+v read alice's handle", sc)
			}
		}
		for _, bad := range []string{NewHandle(), "../../etc/passwd", h + "0", strings.ToUpper(h), ""} {
			if _, ok := read(t, s, alice, bad); ok {
				t.Errorf("handle %q was found", bad)
			}
		}
	})
}

// A handle expires at its TTL, by the store's clock.
func TestHandleExpires(t *testing.T) {
	stores(t, Limits{}, func(t *testing.T, s Store, c *clock) {
		sc := Scope{Agent: "a", Conversation: "c"}
		h := put(t, s, sc, []byte("x"), 30*time.Minute)
		c.add(29 * time.Minute)
		if _, ok := read(t, s, sc, h); !ok {
			t.Fatal("handle gone before its TTL")
		}
		c.add(time.Minute)
		if _, ok := read(t, s, sc, h); ok {
			t.Fatal("handle readable at its TTL")
		}
	})
}

// The store is bounded per agent and in total, oldest first; one agent
// filling its share does not evict another's.
func TestStoreBounds(t *testing.T) {
	limits := Limits{MaxResultBytes: 100, MaxAgentBytes: 300, MaxBytes: 500, MaxAgentEntries: 5}
	stores(t, limits, func(t *testing.T, s Store, c *clock) {
		a, b := Scope{Agent: "a", Conversation: "c"}, Scope{Agent: "b", Conversation: "c"}
		if _, err := s.Put(context.Background(), a, "t", make([]byte, 101), time.Hour); err != ErrTooLarge {
			t.Fatalf("a result over MaxResultBytes: %v, want ErrTooLarge", err)
		}
		hb := put(t, s, b, make([]byte, 100), time.Hour)
		c.add(time.Second)
		var ha []string
		for i := range 4 {
			ha = append(ha, put(t, s, a, bytes.Repeat([]byte{byte('0' + i)}, 100), time.Hour))
			c.add(time.Second)
		}
		// a holds 300 at most: its first went.
		if _, ok := read(t, s, a, ha[0]); ok {
			t.Error("a's oldest handle survived a's bound")
		}
		for _, h := range ha[1:] {
			if _, ok := read(t, s, a, h); !ok {
				t.Error("a's newer handle was evicted")
			}
		}
		if _, ok := read(t, s, b, hb); !ok {
			t.Fatal("b's handle was evicted by a's use")
		}
		// 400 held; two more of c's take the total past 500: the oldest
		// of anyone (b's, then a's second) go.
		cs := Scope{Agent: "c", Conversation: "c"}
		put(t, s, cs, make([]byte, 100), time.Hour)
		c.add(time.Second)
		hc := put(t, s, cs, make([]byte, 100), time.Hour)
		if _, ok := read(t, s, b, hb); ok {
			t.Error("the oldest handle survived the total bound")
		}
		if _, ok := read(t, s, cs, hc); !ok {
			t.Error("the newest handle was evicted")
		}
		// Entries per agent.
		d := Scope{Agent: "d", Conversation: "c"}
		first := put(t, s, d, []byte("1"), time.Hour)
		for range 5 {
			c.add(time.Second)
			put(t, s, d, []byte("1"), time.Hour)
		}
		if _, ok := read(t, s, d, first); ok {
			t.Error("d's sixth handle did not evict its first (MaxAgentEntries 5)")
		}
	})
}

// A restart keeps live handles and drops expired ones and what a crash
// left half-written.
func TestRestartKeepsLiveHandles(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	s, err := OpenLocal(LocalOptions{Dir: dir, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	sc := Scope{Agent: "a", Conversation: "mediated"}
	body := bytes.Repeat([]byte("0123456789"), 500_000)
	live := put(t, s, sc, body, 2*time.Hour)
	short := put(t, s, sc, []byte("short"), time.Minute)
	torn := put(t, s, sc, []byte("torn body"), time.Hour)
	// A crash: a write that never completed and a file cut short.
	if err := os.WriteFile(filepath.Join(dir, tmpPrefix+NewHandle()), []byte(`{"agent":"a"`), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, torn))
	if err := os.Truncate(filepath.Join(dir, torn), fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	c.add(time.Hour)
	s2, err := OpenLocal(LocalOptions{Dir: dir, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := read(t, s2, sc, live); !ok || !bytes.Equal(got, body) {
		t.Fatalf("live handle after restart: ok=%v len=%d", ok, len(got))
	}
	for _, h := range []string{short, torn} {
		if _, ok := read(t, s2, sc, h); ok {
			t.Errorf("handle %s survived the restart", h)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("files left after restart: %v, want only the live handle", names)
	}
}

// report is a 5 MB text result with a few lines to find.
func report() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 5<<20; i++ {
		if i%20000 == 7777 {
			fmt.Fprintf(&b, "%08d ALERT desk=rates breach of limit %d\n", i, i)
			continue
		}
		fmt.Fprintf(&b, "%08d position ok, exposure within bounds, nothing to report here\n", i)
	}
	return b.Bytes()
}

// A 5 MB result paged by ranges comes back byte for byte, and a search
// finds its lines with their offsets.
func TestReadRangeAndGrep(t *testing.T) {
	stores(t, Limits{}, func(t *testing.T, s Store, _ *clock) {
		sc := Scope{Agent: "a", Conversation: "c"}
		body := report()
		h := put(t, s, sc, body, time.Hour)
		b, ok, err := s.Open(context.Background(), sc, h)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		defer b.Close()
		var got []byte
		for off := int64(0); ; {
			ans, err := ReadRange(b, Args{Handle: h, Offset: off, Length: 1 << 20}, 16384)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Offset, Length int64
				Text           string
				NextOffset     *int64 `json:"next_offset"`
				EOF            bool
			}
			if err := json.Unmarshal(ans.Data, &r); err != nil {
				t.Fatal(err)
			}
			if len(ans.Data) > 16384 {
				t.Fatalf("answer of %d bytes over its budget", len(ans.Data))
			}
			if r.Offset != off || int64(len(r.Text)) != r.Length {
				t.Fatalf("range at %d: offset %d, length %d for %d bytes of text", off, r.Offset, r.Length, len(r.Text))
			}
			got = append(got, r.Text...)
			if r.EOF {
				break
			}
			off = *r.NextOffset
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("paged %d bytes, differing from the %d stored", len(got), len(body))
		}

		for _, a := range []Args{{Handle: h, Grep: "ALERT desk=rates"}, {Handle: h, Grep: `ALERT desk=\w+ breach`, Regex: true, ContextLines: 1}} {
			ans, err := Grep(b, a, 16384)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Matches []struct {
					Offset  int64
					Text    string
					Context bool
				}
				Count    int
				Complete bool
			}
			if err := json.Unmarshal(ans.Data, &r); err != nil {
				t.Fatal(err)
			}
			want := bytes.Count(body, []byte("ALERT"))
			if r.Count != want || !r.Complete {
				t.Fatalf("%+v: %d matches (complete %v), want %d", a, r.Count, r.Complete, want)
			}
			for _, m := range r.Matches {
				if !bytes.HasPrefix(body[m.Offset:], []byte(m.Text+"\n")) || (m.Offset > 0 && body[m.Offset-1] != '\n') {
					t.Fatalf("line at %d is not %q", m.Offset, m.Text)
				}
				if !m.Context && !strings.Contains(m.Text, "ALERT") {
					t.Fatalf("match %q holds no ALERT", m.Text)
				}
			}
			if a.ContextLines == 1 && len(r.Matches) != 3*want {
				t.Fatalf("%d lines with one line of context around %d matches", len(r.Matches), want)
			}
		}
	})
}

// A search stops within its budget and says where to go on from; going
// on from there finds the rest.
func TestGrepContinues(t *testing.T) {
	body := []byte(strings.Repeat("hit here\n", 1000))
	b := memBody{bytes.NewReader(body)}
	seen, off := 0, int64(0)
	for range 100 {
		ans, err := Grep(b, Args{Grep: "hit", Offset: off}, 2048)
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Data) > 2048 {
			t.Fatalf("answer of %d bytes over its budget", len(ans.Data))
		}
		var r struct {
			Count      int
			Complete   bool
			NextOffset *int64 `json:"next_offset"`
		}
		_ = json.Unmarshal(ans.Data, &r)
		seen += r.Count
		if r.Complete {
			break
		}
		off = *r.NextOffset
	}
	if seen != 1000 {
		t.Fatalf("found %d lines going on from next_offset, want 1000", seen)
	}
}

func TestParseArgs(t *testing.T) {
	h := NewHandle()
	for _, c := range []struct {
		in, err string
	}{
		{`{"handle":"` + h + `","offset":10,"length":100}`, ""},
		{`{"handle":"` + h + `","grep":"x","regex":true,"context_lines":2}`, ""},
		{`{}`, "handle is required"},
		{`{"handle":"` + h + `","Offset":1}`, `unknown argument "Offset"`},
		{`{"handle":"` + h + `","offset":-1}`, "offset: must be >= 0"},
		{`{"handle":"` + h + `","length":0}`, "length: must be > 0"},
		{`{"handle":"` + h + `","grep":"x","length":5}`, "not both"},
		{`{"handle":"` + h + `","context_lines":11,"grep":"x"}`, "context_lines: must be 0 to 10"},
		{`{"handle":"` + h + `","regex":true}`, "go with grep"},
		{`{"handle":5}`, "handle: wrong type"},
		{`[]`, "must be a JSON object"},
	} {
		_, err := ParseArgs([]byte(c.in))
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v, want %q", c.in, err, c.err)
		}
	}
	if _, err := (Args{Grep: "(", Regex: true}).Pattern(); err == nil {
		t.Error("a pattern that is not RE2 compiled")
	}
}

// FuzzParseArgs holds the argument parser to encoding/json: what it
// accepts decodes as the same values, members matched exactly, and the
// bounds hold.
func FuzzParseArgs(f *testing.F) {
	h := NewHandle()
	for _, s := range []string{`{"handle":"` + h + `","offset":10,"length":100}`, `{"handle":"x","grep":"a.b","regex":true,"context_lines":3}`,
		`{"handle":"x","HANDLE":"y"}`, `{"handle":"x","offset":1e3}`, `null`, `{"handle":"\u0063"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ParseArgs(raw)
		if err != nil {
			return
		}
		var ref map[string]any
		if json.Unmarshal(raw, &ref) != nil || ref == nil {
			t.Fatalf("accepted %q, which encoding/json does not decode as an object", raw)
		}
		if ref["handle"] != a.Handle || a.Handle == "" {
			t.Fatalf("handle %q, encoding/json %v", a.Handle, ref["handle"])
		}
		if a.Offset < 0 || a.Length < 0 || a.ContextLines < 0 || a.ContextLines > MaxContextLines || len(a.Grep) > MaxPattern {
			t.Fatalf("bounds broken: %+v", a)
		}
		if a.Grep != "" && a.Length != 0 {
			t.Fatalf("range and search at once: %+v", a)
		}
		for k := range ref {
			switch k {
			case "handle", "offset", "length", "grep", "regex", "context_lines":
			default:
				t.Fatalf("accepted unknown member %q", k)
			}
		}
	})
}

// Two cllama replicas sharing Redis read each other's handles, with the
// same refusals.
func TestRedisSharedByReplicas(t *testing.T) {
	rc := redisClient(t)
	one, two := NewRedis(rc, RedisOptions{Pod: "desk"}), NewRedis(rc, RedisOptions{Pod: "desk"})
	sc := Scope{Agent: "a", Conversation: "mcp:s"}
	body := report()
	h := put(t, one, sc, body, time.Hour)
	if got, ok := read(t, two, sc, h); !ok || !bytes.Equal(got, body) {
		t.Fatalf("the other replica: ok=%v, %d bytes", ok, len(got))
	}
	if _, ok := read(t, two, Scope{Agent: "b", Conversation: "mcp:s"}, h); ok {
		t.Fatal("another agent read the handle on the other replica")
	}
	if _, ok := read(t, NewRedis(rc, RedisOptions{Pod: "other-pod"}), sc, h); ok {
		t.Fatal("another pod's store read the handle")
	}
}

// FuzzRead holds reads of any result (binary too) to their contract: a
// range answer is JSON within its budget whose text is the result's
// bytes at its offset (where they are valid UTF-8); a search answer is
// JSON whose lines start where it says.
func FuzzRead(f *testing.F) {
	f.Add([]byte("a\nbb\nccc\n"), int64(1), int64(3), "b", false, 1)
	f.Add([]byte("\xff\xfe\n\u00e9\u00e9\n"), int64(1), int64(2), "\u00e9", false, 0)
	f.Add(bytes.Repeat([]byte("x<>&\"\\\n"), 400), int64(5), int64(0), "x.", true, 2)
	f.Fuzz(func(t *testing.T, body []byte, off, length int64, grep string, regex bool, ctxLines int) {
		b := memBody{bytes.NewReader(body)}
		const budget = 1024
		ans, err := ReadRange(b, Args{Offset: max(0, off), Length: max(0, length)}, budget)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Offset, Length int64
			Text           string
		}
		if err := json.Unmarshal(ans.Data, &r); err != nil || len(ans.Data) > budget {
			t.Fatalf("range answer %q (%d bytes): %v", ans.Data, len(ans.Data), err)
		}
		if r.Offset < 0 || r.Offset+r.Length > int64(len(body)) {
			t.Fatalf("range %d+%d outside %d bytes", r.Offset, r.Length, len(body))
		}
		if seg := body[r.Offset : r.Offset+r.Length]; utf8.Valid(seg) && r.Text != string(seg) {
			t.Fatalf("text %q is not the bytes at %d: %q", r.Text, r.Offset, seg)
		}
		if grep == "" || len(grep) > MaxPattern {
			return
		}
		a := Args{Grep: grep, Regex: regex, ContextLines: min(max(ctxLines, 0), MaxContextLines), Offset: max(0, off)}
		ans, err = Grep(b, a, budget)
		if errors.Is(err, ErrArgs) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var g struct {
			Matches []struct {
				Offset int64
			}
		}
		if err := json.Unmarshal(ans.Data, &g); err != nil {
			t.Fatalf("search answer %q: %v", ans.Data, err)
		}
		for _, m := range g.Matches {
			if m.Offset < 0 || m.Offset > int64(len(body)) || (m.Offset > a.Offset && body[m.Offset-1] != '\n' && (m.Offset-a.Offset)%linePiece != 0) {
				t.Fatalf("a line said to start at %d does not", m.Offset)
			}
		}
	})
}

// A search under a budget too small for its first matching line still
// shows it (cut) and moves on, so going on from next_offset ends.
func TestGrepProgressesUnderATinyBudget(t *testing.T) {
	body := []byte(strings.Repeat(strings.Repeat("y", 400)+" hit\n", 5))
	b := memBody{bytes.NewReader(body)}
	off, seen := int64(0), 0
	for range 10 {
		ans, err := Grep(b, Args{Grep: "hit", Offset: off}, 300)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Count      int
			Complete   bool
			NextOffset *int64 `json:"next_offset"`
		}
		_ = json.Unmarshal(ans.Data, &r)
		seen += r.Count
		if r.Complete {
			break
		}
		if *r.NextOffset <= off {
			t.Fatalf("next_offset %d does not move past %d", *r.NextOffset, off)
		}
		off = *r.NextOffset
	}
	if seen != 5 {
		t.Fatalf("%d matches found, want 5", seen)
	}
}
