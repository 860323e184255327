package mediate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolname"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func msgs(s string) []json.RawMessage { return []json.RawMessage{json.RawMessage(`"` + s + `"`)} }

func TestStoreBoundsByCountAndAge(t *testing.T) {
	clock := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	s, err := OpenStore(StoreOptions{Dir: dir, MaxEntries: 3, MaxAge: time.Hour, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		clock.t = clock.t.Add(time.Minute)
		if err := s.Put(context.Background(), fmt.Sprintf("k%d", i), msgs(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := s.Get(context.Background(), "k0"); ok || s.Len() != 3 {
		t.Errorf("least recently used entry kept; len %d", s.Len())
	}
	// The log still holds k0's record: a restart applies the bounds again.
	_ = s.Close()
	if s, err = OpenStore(StoreOptions{Dir: dir, MaxEntries: 3, MaxAge: time.Hour, Now: clock.now}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, ok := s.Get(context.Background(), "k0"); ok || s.Len() != 3 {
		t.Errorf("after a restart: least recently used entry kept; len %d", s.Len())
	}
	clock.t = clock.t.Add(30 * time.Minute)
	if _, ok := s.Get(context.Background(), "k1"); !ok { // refreshes k1
		t.Fatal("k1 missing")
	}
	clock.t = clock.t.Add(45 * time.Minute)
	if _, ok := s.Get(context.Background(), "k2"); ok {
		t.Error("expired entry returned")
	}
	if _, ok := s.Get(context.Background(), "k1"); !ok {
		t.Error("recently used entry expired")
	}
}

// Entries of the one-file-per-entry layout of earlier versions come into
// the log when a store opens; a file that does not decode is dropped, a
// .mark file still guards its key, and none of the old files are left.
func TestStoreMigratesEntryFiles(t *testing.T) {
	dir := t.TempDir()
	key := func(c string) string { return strings.Repeat(c, 64) }
	files := map[string]string{
		key("a") + ".json":       `{"stored":"2026-01-01T00:00:00Z","messages":["x",{"role":"tool"}]}`,
		key("b") + ".json":       `{"stored":"2026-01-01T00:00:00Z","ambiguous":true}`,
		key("c") + ".json":       `{"messages":[`,
		key("d") + ".mark":       ``,
		tempPrefix + "123":       `{"stored":"2026-01-01T00:00:00Z","messages":["half`,
		"settings.json":          `{"not":"continuity"}`,
		"unrelated.mark":         ``,
		"stored-responses.jsonl": `{}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := OpenStore(StoreOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		if got, ok := s.Get(context.Background(), key("a")); !ok || len(got) != 2 || string(got[0]) != `"x"` || string(got[1]) != `{"role":"tool"}` {
			t.Errorf("migrated entry: %v %s", ok, got)
		}
		if _, ok := s.Get(context.Background(), key("c")); ok {
			t.Error("a torn file was used")
		}
		for _, k := range []string{key("b"), key("d")} {
			if err := s.PutOnce(context.Background(), k, msgs("y")); !errors.Is(err, ErrAmbiguous) {
				t.Errorf("a migrated mark no longer guards its key: %v", err)
			}
		}
	}
	check(s)
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	var names []string
	for _, f := range left {
		names = append(names, filepath.Base(f))
	}
	slices.Sort(names)
	if want := []string{lockName, logName, "settings.json", "stored-responses.jsonl", "unrelated.mark"}; !slices.Equal(names, want) {
		t.Errorf("after migration the directory holds %v, want %v (the store's files and what is not its own)", names, want)
	}
	_ = s.Close()
	if s, err = OpenStore(StoreOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
}

// bigMessages is an entry of about n bytes.
func bigMessages(key string, n int) []json.RawMessage {
	return []json.RawMessage{json.RawMessage(strconv.Quote(key + strings.Repeat("x", n-len(key)-2)))}
}

func storeDirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, de := range des {
		if fi, err := de.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// Issue 20: 300 conversations of 512 KiB hidden rounds left 160 MiB on
// disk, all of it reloaded into memory at start. A store is bounded by
// total bytes (oldest out) and per entry, on disk and in memory alike.
func TestStoreBoundedByBytes(t *testing.T) {
	for _, persist := range []bool{true, false} {
		t.Run(fmt.Sprintf("persist=%v", persist), func(t *testing.T) {
			clock := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			dir := ""
			if persist {
				dir = t.TempDir()
			}
			s, err := OpenStore(StoreOptions{Dir: dir, MaxBytes: 4 << 20, MaxEntryBytes: 1 << 20, Now: clock.now})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				clock.t = clock.t.Add(time.Second)
				if err := s.Put(context.Background(), fmt.Sprintf("k%02d", i), bigMessages(fmt.Sprint(i), 520<<10)); err != nil {
					t.Fatal(err)
				}
			}
			if s.Bytes() > 4<<20 || s.Len() != 7 {
				t.Errorf("%d entries, %d bytes; want the newest 7 within 4 MiB", s.Len(), s.Bytes())
			}
			if persist {
				// Dead records (evicted entries) are compacted away once
				// they pass half the bound.
				s.compactions.Wait()
				if got := storeDirBytes(t, dir); got > 6<<20+logHeaderLen {
					t.Errorf("%d bytes on disk, over 1.5 times the 4 MiB bound", got)
				}
			}
			if _, ok := s.Get(context.Background(), "k12"); ok {
				t.Error("an evicted (oldest) entry is still there")
			}
			if got, ok := s.Get(context.Background(), "k19"); !ok || !strings.HasPrefix(string(got[0]), `"19x`) {
				t.Error("the newest entry is missing")
			}
			before := s.Bytes()
			err = s.Put(context.Background(), "huge", bigMessages("huge", 2<<20))
			if !errors.Is(err, ErrEntryTooLarge) {
				t.Fatalf("Put of 2 MiB over a 1 MiB entry cap: %v", err)
			}
			if _, ok := s.Get(context.Background(), "huge"); ok || s.Bytes() != before {
				t.Error("an entry over the per-entry cap was kept")
			}
			if !persist {
				return
			}
			// Reopened with a smaller bound, the store sheds its oldest.
			_ = s.Close()
			s2, err := OpenStore(StoreOptions{Dir: dir, MaxBytes: 2 << 20, Now: clock.now})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if got := storeDirBytes(t, dir); got > 2<<20 || s2.Len() != 3 {
				t.Errorf("reopened: %d entries, %d bytes on disk", s2.Len(), got)
			}
			if _, ok := s2.Get(context.Background(), "k19"); !ok {
				t.Error("the newest entry did not survive the reopen")
			}
		})
	}
}

// Opening a store reads none of its entries: a restart over a large store
// costs memory for the index, not for the hidden transcripts.
func TestStoreReloadHoldsNoMessages(t *testing.T) {
	dir := t.TempDir()
	const entries = 48 // 24 MiB
	func() {
		s, err := OpenStore(StoreOptions{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for i := range entries {
			if err := s.Put(context.Background(), fmt.Sprintf("k%02d", i), bigMessages(fmt.Sprint(i), 512<<10)); err != nil {
				t.Fatal(err)
			}
		}
	}()
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	s, err := OpenStore(StoreOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held := int64(heap()) - int64(base)
	if s.Len() != entries {
		t.Fatalf("%d entries indexed, want %d", s.Len(), entries)
	}
	if held > 2<<20 {
		t.Errorf("opening a store of %d MiB holds %d KiB of heap; want the index only", storeDirBytes(t, dir)>>20, held>>10)
	}
	if got, ok := s.Get(context.Background(), "k07"); !ok || !strings.HasPrefix(string(got[0]), `"7x`) {
		t.Error("an entry did not read back")
	}
	runtime.KeepAlive(s)
}

func TestCatalogAliasesAreCollisionFree(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	m := &manifest.Tools{Version: 1, Tools: []manifest.Tool{{Name: "a.b.c", InputSchema: schema}, {Name: "a.b_c", InputSchema: schema}, {Name: "a.d", InputSchema: schema}}}
	c, err := buildCatalog(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.alias["a.b.c"] == c.alias["a.b_c"] || c.alias["a.d"] != "a__d" {
		t.Errorf("aliases %v", c.alias)
	}
	for canonical, a := range c.alias {
		if !toolname.Safe(a) {
			t.Errorf("%s -> %q", canonical, a)
		}
		if tool, ok := c.resolve(a); !ok || tool.Name != canonical {
			t.Errorf("resolve %q", a)
		}
	}
	cc := newCatalogCache()
	c1, _ := cc.get(m, nil)
	c2, _ := cc.get(m, nil)
	if c1 != c2 {
		t.Error("catalog rebuilt for the same manifest")
	}
}

// A key claimed twice with PutOnce restores nothing, also after a restart;
// Put still replaces.
func TestStorePutOnceMarksAmbiguousKeys(t *testing.T) {
	for _, persist := range []bool{true, false} {
		t.Run(fmt.Sprintf("persist=%v", persist), func(t *testing.T) {
			dir := ""
			if persist {
				dir = t.TempDir()
			}
			s, err := OpenStore(StoreOptions{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.PutOnce(context.Background(), "k", msgs("a")); err != nil {
				t.Fatal(err)
			}
			if got, ok := s.Get(context.Background(), "k"); !ok || string(got[0]) != `"a"` {
				t.Fatal("first claim not stored")
			}
			if err := s.PutOnce(context.Background(), "k", msgs("b")); !errors.Is(err, ErrAmbiguous) {
				t.Fatalf("second claim: %v, want ErrAmbiguous", err)
			}
			if err := s.PutOnce(context.Background(), "k", msgs("c")); !errors.Is(err, ErrAmbiguous) {
				t.Fatalf("third claim: %v, want ErrAmbiguous", err)
			}
			if _, ok := s.Get(context.Background(), "k"); ok {
				t.Error("an ambiguous key restored messages")
			}
			if persist {
				_ = s.Close()
				again, err := OpenStore(StoreOptions{Dir: dir})
				if err != nil {
					t.Fatal(err)
				}
				defer again.Close()
				s = again
				if _, ok := again.Get(context.Background(), "k"); ok {
					t.Error("an ambiguous key restored messages after a restart")
				}
				if err := again.PutOnce(context.Background(), "k", msgs("d")); !errors.Is(err, ErrAmbiguous) {
					t.Errorf("claim after a restart: %v, want ErrAmbiguous", err)
				}
			}
			if err := s.Put(context.Background(), "k", msgs("e")); err != nil {
				t.Fatal(err)
			}
			if got, ok := s.Get(context.Background(), "k"); !ok || string(got[0]) != `"e"` {
				t.Error("Put did not replace")
			}
		})
	}
}

// A mark evicted by count or size pressure still guards its key: a later
// claim of it is ambiguous, not a fresh entry another conversation with
// the same transcript could restore; a mark past the store's age is
// forgotten like an entry.
func TestStoreEvictedMarkStillGuards(t *testing.T) {
	now := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	s, err := OpenStore(StoreOptions{MaxEntries: 2, MaxAge: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.PutOnce(context.Background(), "k", msgs("conversation 1"))
	if err := s.PutOnce(context.Background(), "k", msgs("conversation 2")); !errors.Is(err, ErrAmbiguous) {
		t.Fatal(err)
	}
	_ = s.Put(context.Background(), "x", msgs("x"))
	_ = s.Put(context.Background(), "y", msgs("y")) // the mark is the least recently used: evicted
	if s.Len() != 2 {
		t.Fatalf("Len = %d", s.Len())
	}
	if err := s.PutOnce(context.Background(), "k", msgs("conversation 3")); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("a claim of a key whose mark was evicted: %v, want ErrAmbiguous", err)
	}
	if _, ok := s.Get(context.Background(), "k"); ok {
		t.Fatal("the key restored messages")
	}
	_ = s.Put(context.Background(), "z", msgs("z"))
	_ = s.Put(context.Background(), "w", msgs("w")) // evicted again
	now = now.Add(2 * time.Hour)
	if err := s.PutOnce(context.Background(), "k", msgs("much later")); err != nil {
		t.Fatalf("a mark past the store's age must be forgotten: %v", err)
	}
}

// An evicted mark survives a restart of a store with a directory, and so
// does a mark evicted while the store is opened (its file not yet read);
// the mark files stay bounded.
func TestStoreEvictedMarkSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	var cur *Store
	open := func(max int) *Store { // a restart
		if cur != nil {
			_ = cur.Close()
		}
		s, err := OpenStore(StoreOptions{Dir: dir, MaxEntries: max})
		if err != nil {
			t.Fatal(err)
		}
		cur = s
		return s
	}
	defer func() { _ = cur.Close() }()
	s := open(2)
	_ = s.PutOnce(context.Background(), "k", msgs("conversation 1"))
	if err := s.PutOnce(context.Background(), "k", msgs("conversation 2")); !errors.Is(err, ErrAmbiguous) {
		t.Fatal(err)
	}
	_ = s.Put(context.Background(), "x", msgs("x"))
	_ = s.Put(context.Background(), "y", msgs("y")) // the mark is evicted
	s = open(2)                                     // a restart
	if err := s.PutOnce(context.Background(), "k", msgs("conversation 3")); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("after a restart, a claim of a key whose mark was evicted: %v, want ErrAmbiguous", err)
	}
	if _, ok := s.Get(context.Background(), "k"); ok {
		t.Fatal("the key restored messages")
	}

	// The mark is an entry again; reopening with room for one entry
	// evicts it at load, unread: it is still a mark.
	_ = s.Put(context.Background(), "z", msgs("z"))
	s = open(1)
	if err := s.PutOnce(context.Background(), "k", msgs("conversation 4")); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("a mark evicted while the store opened: %v, want ErrAmbiguous", err)
	}

	// Bounded: at most maxMarksPerEntry marks per entry of the bound.
	s = open(1)
	for i := range 20 {
		key := fmt.Sprintf("m%d", i)
		_ = s.PutOnce(context.Background(), key, msgs("a"))
		_ = s.PutOnce(context.Background(), key, msgs("b"))
		_ = s.Put(context.Background(), fmt.Sprintf("e%d", i), msgs("e"))
	}
	if n := len(s.marks); n > maxMarksPerEntry {
		t.Fatalf("%d marks remembered for a bound of 1 entry", n)
	}
	if s = open(1); len(s.marks) > maxMarksPerEntry {
		t.Fatalf("%d marks remembered after a restart, for a bound of 1 entry", len(s.marks))
	}
}
