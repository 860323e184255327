package mediate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
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
		if err := s.Put(fmt.Sprintf("k%d", i), msgs(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := s.Get("k0"); ok || s.Len() != 3 {
		t.Errorf("least recently used entry kept; len %d", s.Len())
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(files) != 3 {
		t.Errorf("files %v", files)
	}
	clock.t = clock.t.Add(30 * time.Minute)
	if _, ok := s.Get("k1"); !ok { // refreshes k1
		t.Fatal("k1 missing")
	}
	clock.t = clock.t.Add(45 * time.Minute)
	if _, ok := s.Get("k2"); ok {
		t.Error("expired entry returned")
	}
	if _, ok := s.Get("k1"); !ok {
		t.Error("recently used entry expired")
	}
}

func TestStoreReloadsAndDropsCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	s, _ := OpenStore(StoreOptions{Dir: dir})
	if err := s.Put("abc", msgs("x")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "torn.json"), []byte(`{"messages":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenStore(StoreOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s2.Get("abc"); !ok || string(got[0]) != `"x"` {
		t.Errorf("reloaded %v %s", ok, got)
	}
	if _, err := os.Stat(filepath.Join(dir, "torn.json")); !os.IsNotExist(err) {
		t.Error("corrupt file kept")
	}
	if s2.Len() != 1 {
		t.Errorf("len %d", s2.Len())
	}
}

func TestAliases(t *testing.T) {
	cases := map[string]string{
		"trading-api.get_market_context": "trading-api__get_market_context",
		"svc.a.b":                        "svc__a_b",
	}
	for in, want := range cases {
		if got := readableAlias(in); got != want {
			t.Errorf("%s -> %s, want %s", in, got, want)
		}
	}
	long := "service-with-a-very-long-name-indeed.and-a-tool-name-that-is-also-quite-long"
	if a := hashedAlias(long); len(a) > 64 || !aliasPattern.MatchString(a) || a != hashedAlias(long) {
		t.Errorf("hashed alias %q", a)
	}
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
		if !aliasPattern.MatchString(a) {
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
