package inspect

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/pod"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Provenance of the less common forms: a bare service name grant, a
// {source, name} feed, a discovery snapshot, a service-level policy over
// the pod's, an agent without cllama.
func TestBuildProvenance(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "claw-pod.yml"), `
x-claw:
  tool-policy: {max-rounds: 5, total-timeout-ms: 60000, max-tool-calls-per-turn: 100}
services:
  notes:
    image: notes:test
    expose: ["9000"]
  bot:
    image: bot:test
    x-claw:
      cllama: passthrough
      tools: [notes]
      feeds: [{source: notes, name: recent}]
      tool-policy: {max-rounds: 2, max-tool-calls-per-round: 10}
  plain:
    image: bot:test
    x-claw:
      agent: plain.md
`)
	writeFile(t, filepath.Join(dir, "plain.md"), "# plain\n")
	writeFile(t, filepath.Join(dir, ".claw-discovered", "notes.claw-describe.json"), `{
  "version": 2,
  "tools": [
    {"name": "add_note", "description": "Add", "inputSchema": {"type": "object"}, "http": {"method": "POST", "path": "/notes", "body": "json"}},
    {"name": "list_notes", "description": "List", "inputSchema": {"type": "object"}, "http": {"method": "GET", "path": "/notes"}, "annotations": {"readOnlyHint": true}}
  ],
  "feeds": [{"name": "recent", "path": "/notes/recent", "ttl": 15}]
}`)
	ctx := context.Background()
	p, err := pod.Load(ctx, pod.LoadOptions{File: filepath.Join(dir, "claw-pod.yml")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compile.Build(ctx, p, compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build(res, Disk{Dir: dir, ContextDir: compile.ContextDir})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing is written, so every agent's generated files are "missing".
	if len(rep.Warnings) == 0 {
		t.Error("no warning about the uncompiled files")
	}
	var bot, plain *Agent
	for i := range rep.Agents {
		switch rep.Agents[i].ID {
		case "bot":
			bot = &rep.Agents[i]
		case "plain":
			plain = &rep.Agents[i]
		}
	}
	if bot == nil || plain == nil || plain.Cllama || len(plain.Tools) != 0 || plain.Policy != nil {
		t.Fatalf("agents %+v", rep.Agents)
	}
	if len(bot.Tools) != 2 {
		t.Fatalf("tools %+v", bot.Tools)
	}
	for _, tl := range bot.Tools {
		if len(tl.GrantedBy) != 1 || tl.GrantedBy[0].Key != "x-claw.tools[0]" || tl.GrantedBy[0].Rule != "service tools: notes allow all" {
			t.Errorf("%s granted by %+v", tl.Canonical, tl.GrantedBy)
		}
		if tl.From == nil || tl.From.Kind != compile.SourceDiscovered || tl.From.Location != ".claw-discovered/notes.claw-describe.json" {
			t.Errorf("%s from %+v", tl.Canonical, tl.From)
		}
		wantEffect := EffectSideEffect
		if tl.Canonical == "notes.list_notes" {
			wantEffect = EffectReadOnly
		}
		if tl.Effect != wantEffect {
			t.Errorf("%s effect %s", tl.Canonical, tl.Effect)
		}
	}
	if len(bot.Feeds) != 1 {
		t.Fatalf("feeds %+v", bot.Feeds)
	}
	f := bot.Feeds[0]
	if f.SubscribedBy.Key != "x-claw.feeds[0]" || f.SubscribedBy.Rule != "service feeds: notes feed recent" || f.DeclaredBy == nil || f.TTL != 15 {
		t.Errorf("feed %+v", f)
	}
	pol := bot.Policy
	if pol.MaxRounds != (Limit{2, "service x-claw.tool-policy"}) || pol.TotalTimeoutMS != (Limit{60000, "pod x-claw.tool-policy"}) || pol.TimeoutPerToolMS.From != "default" ||
		pol.MaxToolCallsPerRound != (Limit{10, "service x-claw.tool-policy"}) || pol.MaxToolCallsPerTurn != (Limit{100, "pod x-claw.tool-policy"}) {
		t.Errorf("policy %+v", pol)
	}
	var notes *Service
	for i := range rep.Services {
		if rep.Services[i].Name == "notes" {
			notes = &rep.Services[i]
		}
	}
	if notes == nil || notes.Descriptor.Kind != compile.SourceDiscovered || strings.Join(notes.Tools[1].GrantedTo, ",") != "bot" || notes.Tools[0].Call != "POST /notes" {
		t.Fatalf("notes %+v", notes)
	}
	if !rep.Select("notes") || len(rep.Agents) != 0 || len(rep.Services) != 1 {
		t.Fatalf("select notes: %+v", rep)
	}
}

// An operator reading claw inspect sees which tools an agent's runner
// calls itself on /mcp (by canonical name) and which cllama offers.
func TestTextShowsEachToolsMode(t *testing.T) {
	var b strings.Builder
	writeAgent(&b, Agent{ID: "scout", Service: "scout", Cllama: true, Tools: []AgentTool{
		{Presented: "desk__read", Canonical: "desk.read", Effect: EffectReadOnly, Mode: "native"},
		{Presented: "desk__write", Canonical: "desk.write", Effect: EffectSideEffect, Mode: "mediated"},
	}})
	for _, want := range []string{"    desk.read  read-only, native (on /mcp)\n", "    desk__write -> desk.write  side-effect\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// A grant's when: condition is shown with the entry (text and JSON), and
// a tool granted only under conditions lists them; one granted also by an
// entry without when: is always available.
func TestShowsGrantConditions(t *testing.T) {
	dir := t.TempDir()
	src := "../compile/testdata/tool-rules/pod"
	for _, rel := range []string{"claw-pod.yml", "AGENTS.md", "notes/.claw-describe.json", "notes/skill.md"} {
		data, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, rel), string(data))
	}
	ctx := context.Background()
	p, err := pod.Load(ctx, pod.LoadOptions{File: filepath.Join(dir, "claw-pod.yml")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compile.Build(ctx, p, compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build(res, Disk{Dir: dir, ContextDir: compile.ContextDir})
	if err != nil {
		t.Fatal(err)
	}
	const session = `"notes.list_notes" in session.called`
	tools := map[string]AgentTool{}
	for _, a := range rep.Agents {
		if a.ID == "trader" {
			for _, tl := range a.Tools {
				tools[tl.Canonical] = tl
			}
		}
	}
	add, list := tools["notes.add_note"], tools["notes.list_notes"]
	if len(add.When) != 2 || add.When[1] != session || len(add.GrantedBy) != 2 || add.GrantedBy[1].When != session {
		t.Errorf("add_note: when %q, granted by %+v", add.When, add.GrantedBy)
	}
	if len(list.When) != 0 || len(list.GrantedBy) != 2 || list.GrantedBy[0].When != "" || list.GrantedBy[1].When != "false" {
		t.Errorf("list_notes: when %q, granted by %+v", list.When, list.GrantedBy)
	}
	var text, js strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"notes__add_note -> notes.add_note  side-effect, while a when: below holds\n", "        when: " + session + "\n", "        when: false\n",
		"notes__list_notes -> notes.list_notes  read-only, always (an entry without when: grants it)\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(js.String(), `"when": "\"notes.list_notes\" in session.called"`) {
		t.Errorf("JSON lacks the when: of the entry:\n%s", js.String())
	}
}
