package compile

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// grantsOf reads an agent's tool names from tools.json under ctxDir.
func grantsOf(t *testing.T, dir, ctxDir, agent string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ctxDir), agent, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	tm, err := manifest.ParseTools(data)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tm.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func linkOf(t *testing.T, dir, agent string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(dir, filepath.FromSlash(ContextDir), agent))
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// narrowExecutor edits the trading desk so the executor keeps only the
// read-only tool.
func narrowExecutor(t *testing.T, dir string) {
	t.Helper()
	file := filepath.Join(dir, "claw-pod.yml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(data, []byte("          allow: all"), []byte("          allow: [get_market_context]"), 1)
	if bytes.Equal(edited, data) {
		t.Fatal("the trading desk pod changed; update the edit")
	}
	mustWrite(t, file, edited)
}

// TestStageThenApply: the first compile of a pod is live at once; later
// ones are staged and leave the live context alone until Apply, which
// switches only the agents that changed.
func TestStageThenApply(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	t.Setenv("TRADING_API_TOKEN", "t")
	st, err := Stage(dir, build(t, dir, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Applied {
		t.Fatal("the first compile of a pod was not applied")
	}
	all := []string{"trading-api.get_market_context", "trading-api.execute_trade"}
	if got := grantsOf(t, dir, ContextDir, "executor"); !slices.Equal(got, all) {
		t.Fatalf("live executor grants %v", got)
	}
	for _, p := range []string{ProvidersFile, GeneratedFile, StagedProvidersFile, StagedContextDir + "/executor/tools.json", RecordFile} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	rec, err := ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	podDigest, _ := FileDigest(filepath.Join(dir, "claw-pod.yml"))
	if rec.PodFile != "claw-pod.yml" || rec.Inputs["claw-pod.yml"] != podDigest || rec.Inputs["trading-api/.claw-describe.json"] == "" || rec.Inputs["agents/analyst/AGENTS.md"] == "" {
		t.Errorf("record %+v", rec)
	}
	analystLink, executorLink := linkOf(t, dir, "analyst"), linkOf(t, dir, "executor")

	// Edit and compile again: staged, not live.
	narrowExecutor(t, dir)
	st, err = Stage(dir, build(t, dir, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Applied || !slices.Equal(st.Pending, []string{"executor"}) {
		t.Fatalf("second compile: %+v", st)
	}
	if got := grantsOf(t, dir, ContextDir, "executor"); !slices.Equal(got, all) {
		t.Fatalf("compiling changed the live grants: %v", got)
	}
	if got := grantsOf(t, dir, StagedContextDir, "executor"); !slices.Equal(got, all[:1]) {
		t.Fatalf("staged grants %v", got)
	}

	applied, err := Apply(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(applied.Changed, []string{"executor"}) || len(applied.Added)+len(applied.Removed) != 0 || applied.Providers {
		t.Fatalf("applied %+v", applied)
	}
	if got := grantsOf(t, dir, ContextDir, "executor"); !slices.Equal(got, all[:1]) {
		t.Fatalf("live grants after apply %v", got)
	}
	if linkOf(t, dir, "analyst") != analystLink || linkOf(t, dir, "executor") == executorLink {
		t.Error("apply switched an unchanged agent, or not the changed one")
	}
	// The copy just replaced stays for a load that resolved it before the
	// switch.
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(ContextDir), executorLink)); err != nil {
		t.Errorf("the replaced copy is gone at once: %v", err)
	}
	if applied, err := Apply(dir); err != nil || !applied.Empty() {
		t.Fatalf("applying again: %+v %v", applied, err)
	}
	if p, err := Pending(dir); err != nil || len(p) != 0 {
		t.Fatalf("pending after apply: %v %v", p, err)
	}
}

// TestApplyReplacesAnEarlierLayout: a pod whose context an earlier claw
// wrote in place (plain directories) is switched to links, and agents
// that are gone are removed.
func TestApplyReplacesAnEarlierLayout(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	t.Setenv("TRADING_API_TOKEN", "t")
	res := build(t, dir, Options{})
	if err := res.Output.Write(dir); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, filepath.FromSlash(ContextDir), "retired", "metadata.json")
	mustWrite(t, gone, []byte(`{"token":"retired:x"}`))
	st, err := Stage(dir, build(t, dir, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Applied || !slices.Equal(st.Pending, []string{"analyst", "executor", "retired"}) {
		t.Fatalf("staged %+v", st)
	}
	applied, err := Apply(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(applied.Changed, []string{"analyst", "executor"}) || !slices.Equal(applied.Removed, []string{"retired"}) {
		t.Fatalf("applied %+v", applied)
	}
	for _, a := range []string{"analyst", "executor"} {
		if !strings.HasPrefix(linkOf(t, dir, a), ".versions/"+a+"-") {
			t.Errorf("%s is not a link into .versions", a)
		}
	}
	if _, err := os.Lstat(filepath.Dir(gone)); !os.IsNotExist(err) {
		t.Errorf("a removed agent is still live: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(ContextDir)))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && e.Name() != ".versions" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// TestApplyIsAtomicForReaders: while Apply switches an agent back and
// forth between two compiles, a reader resolving the agent's entry as
// cllama does always finds a complete directory.
func TestApplyIsAtomicForReaders(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	t.Setenv("TRADING_API_TOKEN", "t")
	if _, err := Stage(dir, build(t, dir, Options{})); err != nil {
		t.Fatal(err)
	}
	wide := build(t, dir, Options{})
	narrowExecutor(t, dir)
	narrow := build(t, dir, Options{})
	entry := filepath.Join(dir, filepath.FromSlash(ContextDir), "executor")
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads, torn atomic.Int64
	var firstErr atomic.Value
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			real, err := filepath.EvalSymlinks(entry)
			if err == nil {
				var md, tools []byte
				md, err = os.ReadFile(filepath.Join(real, "metadata.json"))
				if err == nil {
					tools, err = os.ReadFile(filepath.Join(real, "tools.json"))
				}
				if err == nil {
					if _, err = manifest.ParseMetadata(md, "executor"); err == nil {
						_, err = manifest.ParseTools(tools)
					}
				}
			}
			reads.Add(1)
			if err != nil {
				torn.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}
	}()
	for i := range 40 {
		res := wide
		if i%2 == 1 {
			res = narrow
		}
		if _, err := Stage(dir, res); err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(dir); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() != 0 {
		t.Fatalf("%d of %d reads failed, first: %v", torn.Load(), reads.Load(), firstErr.Load())
	}
	if reads.Load() == 0 {
		t.Fatal("no reads")
	}
}

// TestPublishCllama: cllama's port is published where asked, and the
// generated file still loads in compose-go and docker-compose; a pod
// without cllama has nothing to publish.
func TestPublishCllama(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	t.Setenv("TRADING_API_TOKEN", "t")
	res := build(t, dir, Options{PublishCllama: "127.0.0.1:18080", Rand: zeroReader{}})
	var compose []byte
	for _, f := range res.Output.Files {
		if f.Path == GeneratedFile {
			compose = f.Data
		}
	}
	if !bytes.Contains(compose, []byte("    ports:\n      - 127.0.0.1:18080:8080\n      - 127.0.0.1::8081\n")) {
		t.Fatalf("cllama not published (beside its admin listener, on loopback at a free port):\n%s", compose)
	}
	plain := build(t, dir, Options{Rand: zeroReader{}})
	for _, f := range plain.Output.Files {
		// Only the admin listener, on loopback: the agents' listener
		// stays inside the pod unless asked.
		if f.Path == GeneratedFile && !bytes.Contains(f.Data, []byte("    ports:\n      - 127.0.0.1::8081\n    restart")) {
			t.Fatalf("the agents' listener published without being asked, or the admin listener not on loopback:\n%s", f.Data)
		}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		if err := res.Output.Write(dir); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("docker-compose", "-p", "claw-test", "-f", GeneratedFile, "config", "-q")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docker-compose rejects the published port: %v\n%s", err, out)
		}
	}
	none := t.TempDir()
	mustWrite(t, filepath.Join(none, "claw-pod.yml"), []byte("services:\n  web:\n    image: web\n"))
	if _, err := Build(context.Background(), loadPod(t, none), Options{PublishCllama: "127.0.0.1:18080"}); err == nil || !strings.Contains(err.Error(), "no cllama to publish") {
		t.Fatalf("a pod without cllama: %v", err)
	}
}

// TestCllamaStopGrace: compose waits for cllama's drain, as the pod sets
// it, before killing the container.
func TestCllamaStopGrace(t *testing.T) {
	for env, want := range map[string]string{"": "35s", "CLLAMA_SHUTDOWN_TIMEOUT: 90s": "95s", "CLLAMA_SHUTDOWN_TIMEOUT: 1500ms": "7s", "CLLAMA_SHUTDOWN_TIMEOUT: bogus": "35s"} {
		dir := t.TempDir()
		mustWrite(t, filepath.Join(dir, "claw-pod.yml"), []byte("x-claw:\n  cllama-defaults:\n    env: {"+env+"}\nservices:\n  a:\n    image: a\n    x-claw: {cllama: passthrough}\n"))
		res := build(t, dir, Options{Rand: zeroReader{}})
		for _, f := range res.Output.Files {
			if f.Path == GeneratedFile && !bytes.Contains(f.Data, []byte("stop_grace_period: "+want+"\n")) {
				t.Errorf("%q: want stop_grace_period %s:\n%s", env, want, f.Data)
			}
		}
	}
}
