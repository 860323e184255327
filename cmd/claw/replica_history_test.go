package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/history"
)

// splitIntoReplicas deals the lines of every agent's history.jsonl out to
// history.r0.jsonl, history.r1.jsonl and history.r2.jsonl in turn, as
// three cllama replicas sharing the directory would have written them,
// and removes history.jsonl.
func splitIntoReplicas(t *testing.T, histDir string) {
	t.Helper()
	agents, err := os.ReadDir(histDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		path := history.Path(histDir, a.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var parts [3]bytes.Buffer
		for i, line := range strings.SplitAfter(string(data), "\n") {
			parts[i%3].WriteString(line)
		}
		for i := range parts {
			p := filepath.Join(histDir, a.Name(), history.ReplicaFileName([]string{"r0", "r1", "r2"}[i]))
			if err := os.WriteFile(p, parts[i].Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// The recorded pod's history written by three replicas reads exactly as
// the one file did: claw history prints the same NDJSON and claw audit the
// same report, save the count of files read. A torn line in one replica's
// file is reported under that file's name.
func TestHistoryAndAuditMergeReplicaFiles(t *testing.T) {
	dir := inObservePod(t)
	histDir := filepath.Join(dir, filepath.FromSlash(compile.HistoryDir))
	before := runClaw(t, "", "audit", "--log", "cllama.log", "--json")
	splitIntoReplicas(t, histDir)

	r := runClaw(t, "", "history", "executor")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err.String())
	}
	golden(t, "history-executor.ndjson", r.out.Bytes())

	after := runClaw(t, "", "audit", "--log", "cllama.log", "--json")
	if after.code != 0 {
		t.Fatalf("audit exit %d: %s", after.code, after.err.String())
	}
	b, a := decodeAudit(t, before.out.Bytes()), decodeAudit(t, after.out.Bytes())
	if a.Sources.HistoryFiles <= b.Sources.HistoryFiles || a.Sources.HistoryEntries != b.Sources.HistoryEntries {
		t.Fatalf("sources before %+v, after %+v", b.Sources, a.Sources)
	}
	a.Sources = b.Sources
	ja, jb := new(bytes.Buffer), new(bytes.Buffer)
	if err := a.WriteJSON(ja); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteJSON(jb); err != nil {
		t.Fatal(err)
	}
	if ja.String() != jb.String() {
		t.Fatalf("claw audit over replica files differs from over one file:\n--- replicas\n%s\n--- one file\n%s", ja, jb)
	}

	torn := filepath.Join(histDir, "executor", history.ReplicaFileName("r1"))
	f, err := os.OpenFile(torn, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"id":"torn`)
	f.Close()
	r = runClaw(t, "", "history", "executor")
	want := filepath.Join("executor", "history.r1.jsonl") + ": 1 malformed line(s) skipped (line 2)"
	if r.code != 0 || !strings.Contains(r.err.String(), want) || strings.Contains(r.err.String(), "history.r0.jsonl") {
		t.Fatalf("exit %d, stderr %q, want %q", r.code, r.err.String(), want)
	}
	golden(t, "history-executor.ndjson", r.out.Bytes())
}
