package mediate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/clawdapus/clawgo/internal/jsonl"
)

func openTestStore(t *testing.T, o StoreOptions) *Store {
	t.Helper()
	s, err := OpenStore(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func logBytes(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, logName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A record a crash cut short is cut off at the next start, and the cut
// reported; the entries before it are whole and the next ones are
// appended where it began.
func TestStoreLogCutsTornTail(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, StoreOptions{Dir: dir})
	for _, k := range []string{"a", "b"} {
		if err := s.Put(context.Background(), k, msgs(k)); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Close()
	whole := int64(len(logBytes(t, dir)))
	torn := appendRecord(nil, kindEntry, 1, "c", msgs(strings.Repeat("c", 4096)))
	f, err := os.OpenFile(filepath.Join(dir, logName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(torn[:len(torn)/2]); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	var cuts []jsonl.Cut
	s = openTestStore(t, StoreOptions{Dir: dir, OnRepair: func(c jsonl.Cut) { cuts = append(cuts, c) }})
	if got := int64(len(logBytes(t, dir))); got != whole {
		t.Errorf("log of %d bytes after the restart, want the %d bytes of its whole records", got, whole)
	}
	if want := (jsonl.Cut{Path: filepath.Join(dir, logName), Offset: whole, Bytes: int64(len(torn) / 2)}); len(cuts) != 1 || cuts[0] != want {
		t.Errorf("cuts reported %+v, want %+v", cuts, want)
	}
	for _, k := range []string{"a", "b"} {
		if got, ok := s.Get(context.Background(), k); !ok || string(got[0]) != `"`+k+`"` {
			t.Errorf("entry %s: %v %s", k, ok, got)
		}
	}
	if _, ok := s.Get(context.Background(), "c"); ok {
		t.Error("the torn record was used")
	}
	if err := s.Put(context.Background(), "d", msgs("d")); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s = openTestStore(t, StoreOptions{Dir: dir})
	if got, ok := s.Get(context.Background(), "d"); !ok || string(got[0]) != `"d"` {
		t.Errorf("an entry written after the cut: %v %s", ok, got)
	}
}

// A record whose bytes changed on disk fails its checksum: it is never
// returned, neither while the store runs nor after a restart, and the
// records after it are read as usual.
func TestStoreLogSkipsDamagedRecord(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, StoreOptions{Dir: dir})
	for _, k := range []string{"a", "b", "c"} {
		if err := s.Put(context.Background(), k, msgs(k+"-message")); err != nil {
			t.Fatal(err)
		}
	}
	damage := func() {
		b := logBytes(t, dir)
		i := bytes.Index(b, []byte("b-message"))
		if i < 0 {
			t.Fatal("record of b not found in the log")
		}
		f, err := os.OpenFile(filepath.Join(dir, logName), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte("B"), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	damage()
	if _, ok := s.Get(context.Background(), "b"); ok {
		t.Error("a damaged record was returned")
	}
	if s.Len() != 2 {
		t.Errorf("len %d: the damaged entry is still indexed", s.Len())
	}
	_ = s.Close()
	s = openTestStore(t, StoreOptions{Dir: dir})
	if _, ok := s.Get(context.Background(), "b"); ok {
		t.Error("a damaged record was returned after a restart")
	}
	for _, k := range []string{"a", "c"} {
		if got, ok := s.Get(context.Background(), k); !ok || string(got[0]) != `"`+k+`-message"` {
			t.Errorf("entry %s: %v %s", k, ok, got)
		}
	}
}

// An entry dropped because its successor was too large does not come back
// after a restart (its record is cleared), while the entries around it do.
func TestStoreDroppedEntryStaysDropped(t *testing.T) {
	dir := t.TempDir()
	o := StoreOptions{Dir: dir, MaxEntryBytes: 1 << 10}
	s := openTestStore(t, o)
	_ = s.Put(context.Background(), "before", msgs("1"))
	_ = s.Put(context.Background(), "k", msgs("stale"))
	_ = s.Put(context.Background(), "after", msgs("2"))
	if err := s.Put(context.Background(), "k", msgs(strings.Repeat("x", 2<<10))); !errors.Is(err, ErrEntryTooLarge) {
		t.Fatalf("oversized Put: %v", err)
	}
	if _, ok := s.Get(context.Background(), "k"); ok {
		t.Fatal("the stale entry is still there")
	}
	_ = s.Close()
	s = openTestStore(t, o)
	if _, ok := s.Get(context.Background(), "k"); ok {
		t.Error("the stale entry came back after a restart")
	}
	if s.Len() != 2 {
		t.Errorf("%d entries after the restart, want before and after", s.Len())
	}
}

// A directory is used by one store at a time: a second (another cllama
// with the same CLLAMA_STATE_DIR) is refused with an error saying so, and
// opens once the first is closed.
func TestStoreDirectoryIsExclusive(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, StoreOptions{Dir: dir})
	_, err := OpenStore(StoreOptions{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "CLLAMA_STATE_DIR") || !strings.Contains(err.Error(), lockName) {
		t.Fatalf("second store on one directory: %v", err)
	}
	_ = s.Close()
	if err := s.Put(context.Background(), "k", msgs("x")); !errors.Is(err, ErrStoreClosed) {
		t.Errorf("Put on a closed store: %v", err)
	}
	openTestStore(t, StoreOptions{Dir: dir})
}

// Compaction runs beside Puts and Gets: every Get returns a whole entry
// (the latest or an earlier version of its key, never another key's or a
// torn one), the log stays near its bound, and after a restart each key
// holds its last version.
func TestStoreCompactsUnderLoad(t *testing.T) {
	dir := t.TempDir()
	o := StoreOptions{Dir: dir, MaxBytes: 1 << 20, MaxEntryBytes: 64 << 10}
	s := openTestStore(t, o)
	const (
		keys    = 8
		workers = 4
		rounds  = 150
	)
	value := func(k, v int) []json.RawMessage {
		return []json.RawMessage{json.RawMessage(fmt.Sprintf(`"k%d v%d %s"`, k, v, strings.Repeat("p", 24<<10))),
			json.RawMessage(fmt.Sprintf(`{"k":%d,"v":%d}`, k, v))}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				k := (w + r) % keys
				key := fmt.Sprintf("key%d", k)
				if w%2 == 0 {
					if err := s.Put(context.Background(), key, value(k, w*rounds+r)); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				if got, ok := s.Get(context.Background(), key); ok {
					var v struct{ K, V int }
					if len(got) != 2 || json.Unmarshal(got[1], &v) != nil || v.K != k || string(got[0]) != string(value(k, v.V)[0]) {
						t.Errorf("Get(%s) during compaction: %.60s", key, got)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	s.compactions.Wait()
	if n := int64(len(logBytes(t, dir))); n > 3<<19+64<<10 {
		t.Errorf("log of %d KiB for a bound of 1 MiB", n>>10)
	}
	want := map[string]string{}
	for k := range keys {
		key := fmt.Sprintf("key%d", k)
		if got, ok := s.Get(context.Background(), key); ok {
			want[key] = string(got[1])
		}
	}
	if len(want) == 0 {
		t.Fatal("no entry left")
	}
	_ = s.Close()
	s = openTestStore(t, o)
	for key, v := range want {
		if got, ok := s.Get(context.Background(), key); !ok || string(got[1]) != v {
			t.Errorf("%s after a restart: %v, want %s", key, ok, v)
		}
	}
}

// The record codec: what appendRecord writes decodes to the same kind,
// time, key and messages; what does not decode is refused without panic.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, kindEntry, 42, "k", msgs("x")))
	f.Add(appendRecord(nil, kindMark, 7, "mark", nil))
	f.Add(appendRecord(nil, kindEntry, 0, "key", []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`[]`)}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodePayload(b); err == nil {
			again := appendRecord(nil, r.kind, r.stored, r.key, r.messages)
			if !bytes.Equal(again[recHeaderLen:], b) {
				t.Fatalf("payload %x decodes to a record that encodes to %x", b, again[recHeaderLen:])
			}
			if _, err := decodeRecord(again); err != nil {
				t.Fatalf("a re-encoded record does not decode: %v", err)
			}
		}
		if r, err := decodeRecord(b); err == nil {
			if again := appendRecord(nil, r.kind, r.stored, r.key, r.messages); !bytes.Equal(again, b) {
				t.Fatalf("record %x decodes to one that encodes to %x", b, again)
			}
		}
	})
}
