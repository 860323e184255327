package agentctx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

const toolsJSON = `{"version":1,"tools":[{"name":"svc.get","description":"d","inputSchema":{"type":"object"},
"execution":{"transport":"http","service":"svc","base_url":"http://svc:80","method":"GET","path":"/x"}}]}`

func TestStoreLoad(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "alice", "metadata.json"), `{"token":"alice:s1","pod":"p"}`)
	write(t, filepath.Join(root, "alice", "tools.json"), toolsJSON)
	write(t, filepath.Join(root, "alice", "feeds.json"), `[{"name":"f","source":"svc","path":"/f","ttl":5}]`)
	write(t, filepath.Join(root, "alice", "service-auth", "svc.json"), `{"service":"svc","auth_type":"bearer","token":"t"}`)
	write(t, filepath.Join(root, "bob", "metadata.json"), `{"token":"bob:s2"}`)
	write(t, filepath.Join(root, "bob", "tools.json"), `{"version":1,"tools":[{"name":"nodot"}]}`)
	write(t, filepath.Join(root, "bob", "feeds.json"), `{`)

	s := NewStore(root, StoreOptions{})
	a, err := s.Get("alice")
	if err != nil {
		t.Fatal(err)
	}
	if a.Metadata.Token != "alice:s1" || !a.Managed() || a.ToolsCount() != 1 || len(a.Feeds) != 1 || a.ServiceAuth["svc"].Token != "t" {
		t.Fatalf("alice = %+v", a)
	}
	b, err := s.Get("bob")
	if err != nil {
		t.Fatal(err)
	}
	if b.ToolsErr == nil || !strings.Contains(b.ToolsErr.Error(), "tools.json: tools[0].name") || b.FeedsErr == nil || b.Managed() {
		t.Fatalf("bob tools err %v feeds err %v", b.ToolsErr, b.FeedsErr)
	}
	for _, id := range []string{"carol", "../alice", "alice/..", "", "a b"} {
		if _, err := s.Get(id); !errors.Is(err, ErrUnknownAgent) {
			t.Errorf("Get(%q) err = %v", id, err)
		}
	}
	// Unknown ids are not cached.
	if len(s.agents) != 2 {
		t.Fatalf("cache holds %d agents", len(s.agents))
	}
}

func TestStoreReloadsOnChangeOnly(t *testing.T) {
	root := t.TempDir()
	md := filepath.Join(root, "alice", "metadata.json")
	write(t, md, `{"token":"alice:old"}`)
	now := time.Unix(1000, 0)
	var reported []error
	s := NewStore(root, StoreOptions{Now: func() time.Time { return now }, OnError: func(_ string, err error) { reported = append(reported, err) }})
	a1, _ := s.Get("alice")
	a2, _ := s.Get("alice")
	if a1 != a2 {
		t.Fatal("snapshot not cached")
	}
	write(t, md, `{"token":"alice:new-secret"}`)
	if a, _ := s.Get("alice"); a.Metadata.Token != "alice:old" {
		t.Fatal("reloaded before the check interval")
	}
	now = now.Add(2 * time.Second)
	a3, err := s.Get("alice")
	if err != nil || a3.Metadata.Token != "alice:new-secret" {
		t.Fatalf("not reloaded: %v %+v", err, a3)
	}
	now = now.Add(2 * time.Second)
	if a4, _ := s.Get("alice"); a4 != a3 {
		t.Fatal("reloaded without a change")
	}
	// A tools.json appearing is a change too.
	write(t, filepath.Join(root, "alice", "tools.json"), toolsJSON)
	now = now.Add(2 * time.Second)
	if a5, _ := s.Get("alice"); !a5.Managed() {
		t.Fatal("tools.json not picked up")
	}
	// A broken metadata.json is reported and refuses the agent.
	write(t, md, `{"token":"mallory:x"}`)
	now = now.Add(2 * time.Second)
	if _, err := s.Get("alice"); err == nil || len(reported) == 0 || !strings.Contains(reported[0].Error(), "does not match") {
		t.Fatalf("err %v reported %v", err, reported)
	}
}

func TestStoreConcurrent(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "alice", "metadata.json"), `{"token":"alice:s"}`)
	s := NewStore(root, StoreOptions{CheckInterval: -1})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, err := s.Get("alice"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestStoreBadServiceAuthSkipped(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "alice", "metadata.json"), `{"token":"alice:s"}`)
	write(t, filepath.Join(root, "alice", "service-auth", "svc.json"), `{"service":"other"}`)
	var reported error
	s := NewStore(root, StoreOptions{OnError: func(_ string, err error) { reported = err }})
	a, err := s.Get("alice")
	if err != nil || len(a.ServiceAuth) != 0 || reported == nil || !strings.Contains(reported.Error(), "service-auth/svc.json") {
		t.Fatalf("a %+v err %v reported %v", a, err, reported)
	}
}

func TestStoreBrokenAgentCachedAndReportedOnce(t *testing.T) {
	root := t.TempDir()
	md := filepath.Join(root, "alice", "metadata.json")
	write(t, md, `{"token":"not-a-token"}`)
	now := time.Unix(1000, 0)
	reports := 0
	s := NewStore(root, StoreOptions{Now: func() time.Time { return now }, OnError: func(string, error) { reports++ }})
	for i := range 10 {
		now = now.Add(time.Duration(i) * time.Second)
		if _, err := s.Get("alice"); err == nil || errors.Is(err, ErrUnknownAgent) {
			t.Fatalf("err = %v", err)
		}
	}
	if reports != 1 {
		t.Fatalf("reported %d times", reports)
	}
	write(t, md, `{"token":"alice:fixed-now"}`)
	now = now.Add(time.Minute)
	if a, err := s.Get("alice"); err != nil || a.Metadata.Token != "alice:fixed-now" {
		t.Fatalf("after fix: %v", err)
	}
	if err := os.Remove(md); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if _, err := s.Get("alice"); !errors.Is(err, ErrUnknownAgent) || len(s.agents) != 0 {
		t.Fatalf("removed agent: %v, cache %d", err, len(s.agents))
	}
}

func TestStoreRemembersMissingUntilNextCheck(t *testing.T) {
	root := t.TempDir()
	now := time.Unix(1000, 0)
	s := NewStore(root, StoreOptions{Now: func() time.Time { return now }})
	if _, err := s.Get("late"); !errors.Is(err, ErrUnknownAgent) {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "late", "metadata.json"), `{"token":"late:s"}`)
	if _, err := s.Get("late"); !errors.Is(err, ErrUnknownAgent) {
		t.Fatal("missing agent re-read before the check interval")
	}
	now = now.Add(2 * time.Second)
	if a, err := s.Get("late"); err != nil || a.ID != "late" {
		t.Fatalf("agent created later not found: %v", err)
	}
	for i := range maxMissing + 10 {
		_, _ = s.Get(fmt.Sprintf("ghost%d", i))
	}
	if len(s.missing) > maxMissing {
		t.Fatalf("negative cache grew to %d", len(s.missing))
	}
}

// An id never asked for before is answered from the directory listing,
// not by looking for its files: a request naming an unknown agent costs a
// map lookup, like a wrong secret, and its timing does not reveal which
// ids exist. An agent created after the listing is found at the next check.
func TestNeverSeenIDsAreAnsweredFromTheListing(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "alice", "metadata.json"), `{"token":"alice:s"}`)
	now := time.Unix(1000, 0)
	s := NewStore(root, StoreOptions{Now: func() time.Time { return now }})
	if a, err := s.Get("alice"); err != nil || a.ID != "alice" {
		t.Fatalf("alice: %v", err)
	}
	write(t, filepath.Join(root, "bob", "metadata.json"), `{"token":"bob:s"}`)
	if _, err := s.Get("bob"); !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("an id never seen was looked up on disk before the next check: %v", err)
	}
	now = now.Add(DefaultCheckInterval)
	if a, err := s.Get("bob"); err != nil || a.ID != "bob" {
		t.Fatalf("bob, created after the listing, not found at the next check: %v", err)
	}
}

// BenchmarkGet compares a cached agent with ids never seen before; the
// proxy answers the second like a wrong secret, so they should cost alike.
func BenchmarkGet(b *testing.B) {
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "alice"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "alice", "metadata.json"), []byte(`{"token":"alice:s"}`), 0o600); err != nil {
		b.Fatal(err)
	}
	s := NewStore(root, StoreOptions{})
	b.Run("known", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Get("alice"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("never-seen", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := s.Get("ghost" + strconv.Itoa(i)); !errors.Is(err, ErrUnknownAgent) {
				b.Fatal(err)
			}
		}
	})
}

// TestStoreFollowsSwitchedLink: claw applies a compile by pointing an
// agent's entry, a symbolic link, at a new copy of its files. The switch
// is seen even when the copies' files agree in size and modification
// time, and one load reads every file from the copy it resolved.
func TestStoreFollowsSwitchedLink(t *testing.T) {
	root := t.TempDir()
	when := time.Now().Add(-time.Hour)
	copyOf := func(name, token, tool string) {
		dir := filepath.Join(root, ".versions", name)
		write(t, filepath.Join(dir, "metadata.json"), `{"token":"alice:`+token+`"}`)
		write(t, filepath.Join(dir, "tools.json"), strings.Replace(toolsJSON, "svc.get", tool, 1))
		for _, f := range []string{"metadata.json", "tools.json"} {
			if err := os.Chtimes(filepath.Join(dir, f), when, when); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyOf("alice-1", "s1", "svc.get")
	copyOf("alice-2", "s2", "svc.put") // same sizes, same times
	link := filepath.Join(root, "alice")
	if err := os.Symlink(".versions/alice-1", link); err != nil {
		t.Fatal(err)
	}
	s := NewStore(root, StoreOptions{CheckInterval: -1})
	a, err := s.Get("alice")
	if err != nil || a.Metadata.Token != "alice:s1" || a.Tools.Tools[0].Name != "svc.get" {
		t.Fatalf("before the switch: %+v %v", a, err)
	}
	tmp := filepath.Join(root, ".alice.link")
	if err := os.Symlink(".versions/alice-2", tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
	a, err = s.Get("alice")
	if err != nil || a.Metadata.Token != "alice:s2" || a.Tools.Tools[0].Name != "svc.put" {
		t.Fatalf("after the switch: %+v %v", a, err)
	}
	// Removing the link removes the agent.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("alice"); !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("after removal: %v", err)
	}
}
