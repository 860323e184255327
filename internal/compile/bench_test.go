package compile

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/pod"
)

// writeLargePod generates a pod of agents agents and services services,
// each service describing 5 tools and 2 feeds behind bearer auth; agent i
// is granted two services (one fully, one a single tool) plus pod
// defaults, and subscribes to two feeds.
func writeLargePod(tb testing.TB, dir string, agents, services int) {
	tb.Helper()
	var y strings.Builder
	y.WriteString("x-claw:\n  pod: large\n  cllama-defaults:\n    env:\n      OPENAI_API_KEY: k\n  tools-defaults:\n    - service: svc-0\n      allow: [tool_0]\nservices:\n")
	for s := 0; s < services; s++ {
		name := fmt.Sprintf("svc-%d", s)
		d := map[string]any{"version": 2, "description": "Service " + name, "skill": "skill.md",
			"auth": map[string]string{"type": "bearer", "env": "TOKEN"}}
		var tools, feeds []map[string]any
		for i := 0; i < 5; i++ {
			tools = append(tools, map[string]any{"name": fmt.Sprintf("tool_%d", i), "description": "Tool",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]string{"type": "string"}}},
				"http":        map[string]string{"method": "POST", "path": fmt.Sprintf("/t/%d/{id}", i)}})
		}
		for i := 0; i < 2; i++ {
			feeds = append(feeds, map[string]any{"name": fmt.Sprintf("%s-feed-%d", name, i), "path": fmt.Sprintf("/f/%d", i), "ttl": 30})
		}
		d["tools"], d["feeds"] = tools, feeds
		data, _ := json.Marshal(d)
		mustWrite(tb, filepath.Join(dir, name, DescribeFileName), data)
		mustWrite(tb, filepath.Join(dir, name, "skill.md"), []byte("# "+name+"\n"))
		fmt.Fprintf(&y, "  %s:\n    build: ./%s\n    expose: [\"80\"]\n    environment:\n      TOKEN: t-%d\n", name, name, s)
	}
	mustWrite(tb, filepath.Join(dir, "AGENTS.md"), []byte("# Agent\n"))
	for a := 0; a < agents; a++ {
		s1, s2 := (a+1)%services, (a+2)%services
		fmt.Fprintf(&y, "  agent-%d:\n    image: runner\n    x-claw:\n      agent: AGENTS.md\n      cllama: passthrough\n      surfaces: [\"service://svc-%d\"]\n      tools:\n        - ...\n        - svc-%d\n        - service: svc-%d\n          allow: [tool_3]\n      feeds: [svc-%d-feed-0, {source: svc-%d, name: svc-%d-feed-1}]\n",
			a, s1, s1, s2, s1, s2, s2)
	}
	mustWrite(tb, filepath.Join(dir, "claw-pod.yml"), []byte(y.String()))
}

func mustWrite(tb testing.TB, p string, data []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkCompileLargePod measures load + compile (in memory) of 200
// agents over 20 services; BenchmarkCompileLargePodWrite adds writing the
// tree (steady state: unchanged files are skipped).
func BenchmarkCompileLargePod(b *testing.B) {
	dir := b.TempDir()
	writeLargePod(b, dir, 200, 20)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := pod.Load(ctx, pod.LoadOptions{File: filepath.Join(dir, "claw-pod.yml")})
		if err != nil {
			b.Fatal(err)
		}
		res, err := Build(ctx, p, Options{Rand: zeroReader{}})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Agents) != 200 {
			b.Fatalf("%d agents", len(res.Agents))
		}
	}
}

func BenchmarkCompileLargePodWrite(b *testing.B) {
	dir := b.TempDir()
	writeLargePod(b, dir, 200, 20)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := pod.Load(ctx, pod.LoadOptions{File: filepath.Join(dir, "claw-pod.yml")})
		if err != nil {
			b.Fatal(err)
		}
		res, err := Build(ctx, p, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := res.Output.Write(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLargePodCompiles keeps the benchmark's pod honest in normal runs.
func TestLargePodCompiles(t *testing.T) {
	dir := t.TempDir()
	writeLargePod(t, dir, 20, 5)
	res := build(t, dir, Options{Rand: zeroReader{}})
	if len(res.Agents) != 20 || len(res.Agents[0].Tools) == 0 || len(res.Agents[0].Feeds) != 2 {
		t.Fatalf("unexpected result: %d agents, %d tools, %d feeds", len(res.Agents), len(res.Agents[0].Tools), len(res.Agents[0].Feeds))
	}
}

// BenchmarkBuildLargePod is Build alone (the pod loaded once): projection,
// compose generation and its validation by compose-go.
func BenchmarkBuildLargePod(b *testing.B) {
	dir := b.TempDir()
	writeLargePod(b, dir, 200, 20)
	ctx := context.Background()
	p, err := pod.Load(ctx, pod.LoadOptions{File: filepath.Join(dir, "claw-pod.yml")})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Build(ctx, p, Options{Rand: zeroReader{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStageApplyLargePod measures what claw up adds to a compile of
// 200 agents: staging, then applying. Unchanged: every agent's copy is
// digested and found current. Changed: every run alternates between two
// compiles that differ for every agent, so every link switches (to a new
// copy, or back to the copy kept from the run before).
func BenchmarkStageApplyLargePod(b *testing.B) {
	for _, changed := range []bool{false, true} {
		name := "unchanged"
		if changed {
			name = "changed"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			writeLargePod(b, dir, 200, 20)
			ctx := context.Background()
			p, err := pod.Load(ctx, pod.LoadOptions{File: filepath.Join(dir, "claw-pod.yml")})
			if err != nil {
				b.Fatal(err)
			}
			res, err := Build(ctx, p, Options{Rand: zeroReader{}})
			if err != nil {
				b.Fatal(err)
			}
			// Another compile to switch to: every tools.json differs (by a
			// trailing newline), so every agent switches.
			other, err := Build(ctx, p, Options{Rand: zeroReader{}})
			if err != nil {
				b.Fatal(err)
			}
			for i, f := range other.Output.Files {
				if strings.HasSuffix(f.Path, "/tools.json") {
					other.Output.Files[i].Data = append(append([]byte(nil), f.Data...), '\n')
				}
			}
			if _, err := Stage(dir, res); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := res
				if changed && i%2 == 0 {
					r = other
				}
				if _, err := Stage(dir, r); err != nil {
					b.Fatal(err)
				}
				if _, err := Apply(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
