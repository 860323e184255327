package spend

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/faulttest"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire"
)

// settleOne admits and settles one unit on counter key of l.
func settleOne(t testing.TB, l *FileLedger, key string) int64 {
	t.Helper()
	ctx := context.Background()
	if i, _, _, err := l.Reserve(ctx, []Charge{{Key: key, Limit: 1 << 62, Reserve: 1, Check: true}}); err != nil || i >= 0 {
		t.Fatalf("reserve: %d %v", i, err)
	}
	after, err := l.Settle(ctx, []Settlement{{Key: key, Reserved: 1, Actual: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return after[0]
}

func spentOf(t testing.TB, l *FileLedger, key string) int64 {
	t.Helper()
	v, err := l.Spent(context.Background(), []string{key})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func openLedger(t testing.TB, path string) *FileLedger {
	t.Helper()
	l, err := OpenFileLedger(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A settlement Settle acknowledged is on disk: a ledger reopened without
// being closed (a crash) has it, through the snapshot's rewrites too; the
// log stays short.
func TestFileLedgerReopensWithWhatItAcknowledged(t *testing.T) {
	old := compactBytes
	compactBytes = 2 << 10 // a rewrite every few dozen settlements
	t.Cleanup(func() { compactBytes = old })
	path := filepath.Join(t.TempDir(), "spend.json")
	l := openLedger(t, path)
	for i := 1; i <= 500; i++ {
		settleOne(t, l, "a")
		if i%3 == 0 {
			settleOne(t, l, "b")
		}
	}
	// Not closed: what a crash leaves.
	again := openLedger(t, path)
	if a, b := spentOf(t, again, "a"), spentOf(t, again, "b"); a != 500 || b != 166 {
		t.Fatalf("after reopening: a %d, b %d; want 500 and 166", a, b)
	}
	if fi, err := os.Stat(path + ".log"); err != nil || fi.Size() > compactBytes {
		t.Fatalf("log: %v %v", fi, err)
	}
	settleOne(t, again, "a")
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if third := openLedger(t, path); spentOf(t, third, "a") != 501 {
		t.Fatalf("after a close: a %d, want 501", spentOf(t, third, "a"))
	}
}

// A turn's settlements — a mediated turn's rounds — are on disk once its
// Close has returned: a ledger reopened without being closed (a crash)
// has them.
func TestTurnIsOnDiskOnceClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spend.json")
	m, _ := New(Options{Ledger: openLedger(t, path)})
	ctx := context.Background()
	b := []manifest.Budget{{Unit: manifest.BudgetTokens, Limit: 1 << 40, Per: "total"}}
	tr, err := m.Open("a", b, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := tr.Admit(ctx, gpt); err != nil {
			t.Fatal(err)
		}
		tr.Settle(ctx, wire.Usage{Input: 10, Output: 5}, true)
	}
	tr.Close(ctx)
	if got := spentOf(t, openLedger(t, path), "agent:a:tokens:total"); got != 45 {
		t.Fatalf("after reopening: %d tokens, want 45", got)
	}
}

// What a crash or a power loss can leave — a partial last line, lines of
// garbage, a snapshot rewritten while the log still held its lines, a
// temporary file — is repaired at open without losing a whole line, and
// counted once. A spend.json of the earlier format (a bare map) is read.
func TestFileLedgerRepairsWhatACrashLeaves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spend.json")
	l := openLedger(t, path)
	settleOne(t, l, "a")
	settleOne(t, l, "a")
	logBytes, err := os.ReadFile(path + ".log")
	if err != nil || strings.Count(string(logBytes), "\n") != 2 {
		t.Fatalf("log %q %v", logBytes, err)
	}
	// A snapshot rewritten with both lines, the log not yet emptied.
	snap, _ := json.Marshal(snapshot{Seq: 2, Counters: map[string]*counter{"a": {Settled: 2}}})
	write := func(name string, b []byte) {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(path, snap)
	// Then a third line, garbage (zeros, as a power loss leaves), and a
	// partial line.
	third := `{"q":3,"s":[{"k":"a","a":1}]}` + "\n"
	write(path+".log", []byte(string(logBytes)+third+"\x00\x00\x00\x00\n"+`{"q":4,"s":[{"k":"a","a":`))
	write(filepath.Join(dir, tempPrefix+"123"), []byte("{"))
	again := openLedger(t, path)
	if got := spentOf(t, again, "a"); got != 3 {
		t.Fatalf("after repair a = %d, want 3 (2 in the snapshot, 1 in the log)", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if settleOne(t, again, "a") != 4 || spentOf(t, openLedger(t, path), "a") != 4 {
		t.Fatal("a settlement after the repair was not kept")
	}

	// The earlier format.
	legacy := filepath.Join(t.TempDir(), "spend.json")
	exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	write(legacy, []byte(`{"agent:a:usd:day:1":{"settled":42,"expires":"`+exp+`"},"gone":{"settled":1,"expires":"2001-01-01T00:00:00Z"}}`))
	ll := openLedger(t, legacy)
	if spentOf(t, ll, "agent:a:usd:day:1") != 42 || spentOf(t, ll, "gone") != 0 {
		t.Fatal("the earlier spend.json was not read")
	}
}

const (
	killHelperPath = "SPEND_KILL_HELPER_PATH"
	killHelperGen  = "SPEND_KILL_HELPER_GEN"
)

// killBudget is the budget the kill helper's requests count against.
var killBudget = []manifest.Budget{{Unit: manifest.BudgetRequests, Limit: 1 << 40, Per: "total"}}

// TestKillHelper is not a test: TestKill9 runs the test binary again with
// this test selected, as the process it kills. It meters one request
// after the other, as the proxy does (Open, Admit, Settle, Close), and
// prints "ACK <n>" once each Close has returned.
func TestKillHelper(t *testing.T) {
	path := os.Getenv(killHelperPath)
	if path == "" {
		t.Skip("helper process for TestKill9")
	}
	compactBytes = 1 << 10 // the snapshot is rewritten every few settlements
	l, err := OpenFileLedger(path, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	m, _ := New(Options{Ledger: l})
	ctx := context.Background()
	for k := 0; ; k++ {
		tr, err := m.Open("a", killBudget, "")
		if err == nil {
			err = tr.Admit(ctx, gpt)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		tr.Settle(ctx, wire.Usage{Input: 1, Output: 1}, true)
		tr.Close(ctx)
		fmt.Fprintf(os.Stdout, "ACK %s-%d\n", os.Getenv(killHelperGen), k)
	}
}

// A process killed with SIGKILL while it meters requests (and rewrites
// its snapshot), restarted and killed again, has every request whose turn
// it closed, and at most one more per kill (closed, not yet
// acknowledged); nothing it left behind stops the next open.
func TestKill9(t *testing.T) {
	if os.Getenv(killHelperPath) != "" {
		t.Skip("in the helper process")
	}
	kills := 8
	if testing.Short() {
		kills = 3
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "spend.json")
	acked := faulttest.KillRuns(t, faulttest.KillLoop{
		Helper: "^TestKillHelper$",
		Env: func(gen int) []string {
			return []string{killHelperPath + "=" + path, killHelperGen + "=" + strconv.Itoa(gen)}
		},
		Runs:   kills,
		KillAt: func(gen int) int { return 50 + 137*gen%400 },
	})
	l := openLedger(t, path)
	got := spentOf(t, l, "agent:a:requests:total")
	if got < int64(len(acked)) || got > int64(len(acked)+kills) {
		t.Fatalf("%d settled after %d kills, %d acknowledged", got, kills, len(acked))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	t.Logf("%d kills, %d settlements acknowledged, %d on disk", kills, len(acked), got)
}

// BenchmarkFileLedgerSettle is a settlement's cost in the file ledger
// (its line written and fsync'ed), one at a time and from many
// goroutines at once, which share fsyncs.
func BenchmarkFileLedgerSettle(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		b.Run(map[bool]string{false: "serial", true: "parallel"}[parallel], func(b *testing.B) {
			l := openLedger(b, filepath.Join(b.TempDir(), "spend.json"))
			b.Cleanup(func() { _ = l.Close() })
			if !parallel {
				for b.Loop() {
					settleOne(b, l, "k")
				}
				return
			}
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					settleOne(b, l, "k")
				}
			})
		})
	}
}
