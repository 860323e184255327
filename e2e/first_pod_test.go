package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/auditlog"
)

// firstPodDoc is the walkthrough TestFirstPod follows.
const firstPodDoc = "docs/first-pod.md"

// TestFirstPod follows docs/first-pod.md as a reader does, in a fresh
// directory: it writes every fenced block that names a file (```yaml
// title="claw-pod.yml", with `append` to add to it), runs every command of
// the `console` blocks ("$ " lines) with this tree's claw first on PATH,
// and checks that the output the doc shows under a command is what the
// command printed. It then checks what the prose promises beyond the
// output shown: the containers' states, the audit records, a clean
// `claw down`.
func TestFirstPod(t *testing.T) {
	requireDocker(t)
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, firstPodDoc))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseWalkthrough(string(src))
	if err != nil {
		t.Fatalf("%s: %v", firstPodDoc, err)
	}
	claw := buildClaw(t, root)
	ensureImages(t, root)
	eachCompose(t, func(t *testing.T) { firstPod(t, steps, claw) })
}

// docStep is one thing the walkthrough has the reader do: write (or append
// to) a file, or run a command and see its output.
type docStep struct {
	line    int    // where the doc says it, for messages
	file    string // a file block: the file, relative to the current directory
	append  bool   // add to the file instead of writing it
	content string
	command string   // a console command
	want    []string // the output the doc shows under the command
}

func (s docStep) String() string {
	if s.file != "" {
		return fmt.Sprintf("%s:%d: file %s", firstPodDoc, s.line, s.file)
	}
	return fmt.Sprintf("%s:%d: $ %s", firstPodDoc, s.line, s.command)
}

var (
	fenceInfo  = regexp.MustCompile("^(`{3,})(.*)$")
	titleAttr  = regexp.MustCompile(`\btitle="([^"]+)"`)
	podNameKey = regexp.MustCompile(`(?m)^\s+pod:\s*(\S+)\s*$`)
)

// parseWalkthrough reads the steps out of the doc's fenced blocks, in
// order. Blocks with a title are files; `console` blocks are commands,
// each "$ " line followed by the output lines the doc shows for it.
// Other blocks are illustrations and are skipped.
func parseWalkthrough(doc string) ([]docStep, error) {
	var steps []docStep
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceInfo.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		fence, info := m[1], strings.TrimSpace(m[2])
		start := i + 1
		end := start
		for end < len(lines) && strings.TrimRight(lines[end], " ") != fence {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("line %d: the block opened here is never closed", i+1)
		}
		body := lines[start:end]
		i = end
		fields := strings.Fields(info)
		lang := ""
		if len(fields) > 0 {
			lang = fields[0]
		}
		switch t := titleAttr.FindStringSubmatch(info); {
		case t != nil:
			steps = append(steps, docStep{line: start, file: t[1], append: slices.Contains(fields[1:], "append"),
				content: strings.Join(body, "\n") + "\n"})
		case lang == "console":
			for j, l := range body {
				if cmd, ok := strings.CutPrefix(l, "$ "); ok {
					steps = append(steps, docStep{line: start + j + 1, command: strings.TrimSpace(cmd)})
					continue
				}
				if len(steps) == 0 || steps[len(steps)-1].command == "" {
					return nil, fmt.Errorf("line %d: console output before any command", start+j+1)
				}
				if s := strings.TrimSpace(l); s != "" && s != "..." {
					steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
				}
			}
		}
	}
	// The walkthrough the issue asked for: these must stay in it.
	for _, cmd := range []string{"claw compile", "claw up -d", "claw ps", "claw logs", "claw audit", "claw down"} {
		if !slices.ContainsFunc(steps, func(s docStep) bool { return strings.HasPrefix(s.command, cmd) }) {
			return nil, fmt.Errorf("no console step runs %q", cmd)
		}
	}
	if !slices.ContainsFunc(steps, func(s docStep) bool { return s.file == "claw-pod.yml" && !s.append }) {
		return nil, fmt.Errorf("no block writes claw-pod.yml")
	}
	return steps, nil
}

// rename gives the doc's pod a unique name in every step (files, commands,
// output), so that runs in parallel and leftovers of a reader's own run
// never meet.
func rename(steps []docStep, project string) ([]docStep, error) {
	var from string
	for _, s := range steps {
		if s.file == "claw-pod.yml" && !s.append {
			if m := podNameKey.FindStringSubmatch(s.content); m != nil {
				from = m[1]
			}
		}
	}
	if from == "" {
		return nil, fmt.Errorf("claw-pod.yml has no x-claw pod: name")
	}
	out := make([]docStep, len(steps))
	for i, s := range steps {
		s.content = strings.ReplaceAll(s.content, from, project)
		s.command = strings.ReplaceAll(s.command, from, project)
		s.want = slices.Clone(s.want)
		for j := range s.want {
			s.want[j] = strings.ReplaceAll(s.want[j], from, project)
		}
		out[i] = s
	}
	return out, nil
}

// firstPod plays the steps in a fresh directory.
func firstPod(t *testing.T, docSteps []docStep, claw string) {
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	project := "firstpod-" + hex.EncodeToString(suffix[:])
	steps, err := rename(docSteps, project)
	if err != nil {
		t.Fatal(err)
	}
	sh := &docShell{t: t, cwd: t.TempDir(), path: filepath.Dir(claw) + string(os.PathListSeparator) + os.Getenv("PATH"),
		pwdFile: filepath.Join(t.TempDir(), "pwd")}
	// Taken down whatever happens, from wherever the pod file was written.
	p := &pod{t: t, project: project, claw: claw}
	t.Cleanup(func() {
		if p.dir != "" {
			p.down()
		}
	})
	sh.diag = func() string {
		if p.dir == "" {
			return ""
		}
		out, _ := tryRun(p.dir, time.Minute, claw, "audit")
		return "\nclaw audit:\n" + out
	}

	began := time.Now()
	for _, s := range steps {
		if s.file != "" {
			path := filepath.Join(sh.cwd, filepath.FromSlash(s.file))
			flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			if s.append {
				flag = os.O_WRONLY | os.O_APPEND
			}
			f, err := os.OpenFile(path, flag, 0o644)
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			_, err = f.WriteString(s.content)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			if s.file == "claw-pod.yml" {
				p.dir = sh.cwd
			}
			continue
		}
		out := sh.step(s)
		if check := firstPodChecks[strings.Join(strings.Fields(s.command), " ")]; check != nil {
			check(t, p, out)
		}
		t.Logf("%s (done at %s)", s, time.Since(began).Round(time.Millisecond))
	}
}

// docShell runs the doc's commands as a reader's shell would: one after
// the other, each in the directory the previous one left (a `cd` counts),
// with this tree's claw first on PATH.
type docShell struct {
	t       *testing.T
	cwd     string
	path    string
	pwdFile string
	// diag says what the pod did, for a failure's message.
	diag func() string
}

// readOnly are the commands that may be repeated until their output is the
// doc's: the agents hold their conversations after `claw up -d` returns,
// and the doc's reader waits for them too.
var readOnly = []string{"claw ps", "claw logs", "claw audit", "claw history"}

const settleTimeout = 2 * time.Minute

// step runs a command step and checks its output, repeating a read-only
// command until the output matches (or settleTimeout passes).
func (sh *docShell) step(s docStep) string {
	t := sh.t
	t.Helper()
	patterns := make([]*regexp.Regexp, len(s.want))
	for i, w := range s.want {
		patterns[i] = outputPattern(w)
	}
	retry := slices.ContainsFunc(readOnly, func(c string) bool { return strings.HasPrefix(s.command, c) })
	deadline := time.Now().Add(settleTimeout)
	for {
		out, err := sh.run(s.command)
		missing := -1
		if err == nil {
			missing = matchLines(patterns, out)
		}
		if err == nil && missing < 0 {
			return out
		}
		if !retry || time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("%s: %v\n%s%s", s, err, out, sh.diag())
			}
			t.Fatalf("%s: the output has no line matching (in order)\n    %s\noutput:\n%s%s", s, s.want[missing], out, sh.diag())
		}
		time.Sleep(time.Second)
	}
}

// run runs one command line with bash in the current directory and
// follows a cd.
func (sh *docShell) run(command string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	script := command + "\n__status=$?\npwd > \"$CLAW_DOC_PWD\"\nexit $__status\n"
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", script)
	cmd.Dir = sh.cwd
	cmd.Env = append(os.Environ(), "PATH="+sh.path, "CLAW_DOC_PWD="+sh.pwdFile)
	out, err := cmd.CombinedOutput()
	if pwd, rerr := os.ReadFile(sh.pwdFile); rerr == nil && strings.TrimSpace(string(pwd)) != "" {
		sh.cwd = strings.TrimSpace(string(pwd))
	}
	return string(out), err
}

var (
	timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	duration  = regexp.MustCompile(`\d+ms\b`)
	spaces    = regexp.MustCompile(`\s+`)
)

// outputPattern turns a line of the doc's output into a pattern matching
// the end of an output line: "…" stands for anything; a time and a
// latency stand for any time and latency; a run of spaces (table columns)
// for any run; what comes before the line (Compose's log prefix) is not
// compared.
func outputPattern(line string) *regexp.Regexp {
	var b strings.Builder
	for i, part := range strings.Split(strings.TrimSpace(line), "…") {
		if i > 0 {
			b.WriteString(".*")
		}
		b.WriteString(literalPattern(part))
	}
	return regexp.MustCompile(b.String() + `\s*$`)
}

// literalPattern quotes text, keeping times, latencies and spacing loose.
func literalPattern(text string) string {
	var b strings.Builder
	for len(text) > 0 {
		loc := firstMatch(text, timestamp, duration, spaces)
		if loc == nil {
			b.WriteString(regexp.QuoteMeta(text))
			break
		}
		b.WriteString(regexp.QuoteMeta(text[:loc[0]]))
		switch m := text[loc[0]:loc[1]]; {
		case timestamp.MatchString(m):
			b.WriteString(timestamp.String())
		case duration.MatchString(m):
			b.WriteString(`\d+ms`)
		default:
			b.WriteString(`\s+`)
		}
		text = text[loc[1]:]
	}
	return b.String()
}

// firstMatch is the leftmost match of any of res in s.
func firstMatch(s string, res ...*regexp.Regexp) []int {
	var best []int
	for _, re := range res {
		if loc := re.FindStringIndex(s); loc != nil && (best == nil || loc[0] < best[0]) {
			best = loc
		}
	}
	return best
}

// matchLines checks that every pattern matches a line of out, in order,
// and returns the index of the first that does not (-1: all match).
func matchLines(patterns []*regexp.Regexp, out string) int {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	next := 0
	for next < len(patterns) && sc.Scan() {
		if patterns[next].MatchString(strings.TrimRight(sc.Text(), " \t\r")) {
			next++
		}
	}
	if next < len(patterns) {
		return next
	}
	return -1
}

// firstPodChecks are what the doc's prose promises about a command beyond
// the output it shows, checked after that command ran.
var firstPodChecks = map[string]func(t *testing.T, p *pod, out string){
	// "without it, this pod stops at `no descriptor found for "desk"`"
	"claw compile --images": func(t *testing.T, p *pod, _ string) {
		out, err := tryRun(p.dir, time.Minute, p.claw, "compile")
		if err == nil || !strings.Contains(out, `no descriptor found for "desk"`) {
			t.Errorf("claw compile without --images: %v, want a failure naming the desk's missing descriptor:\n%s", err, out)
		}
	},
	// "cllama (healthy once its health check has passed), desk and model
	// up; trader and helper exited with code 0"; and the agents hold no
	// credential.
	"claw ps": func(t *testing.T, p *pod, _ string) {
		want := map[string]string{"cllama": "running healthy 0", "desk": "running  0", "model": "running  0",
			"trader": "exited  0", "helper": "exited  0"}
		// The health check's first probe may still be to come.
		starting := maps.Clone(want)
		starting["cllama"] = "running starting 0"
		var got map[string]string
		deadline := time.Now().Add(settleTimeout)
		for {
			out := run(t, p.dir, time.Minute, p.claw, "ps", "--json")
			var doc struct {
				Services []struct {
					Name       string `json:"name"`
					Containers []struct {
						State    string `json:"state"`
						Health   string `json:"health"`
						ExitCode int    `json:"exit_code"`
					} `json:"containers"`
				} `json:"services"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("claw ps --json: %v\n%s", err, out)
			}
			got = map[string]string{}
			for _, s := range doc.Services {
				for _, c := range s.Containers {
					got[s.Name] = fmt.Sprintf("%s %s %d", c.State, c.Health, c.ExitCode)
				}
			}
			if maps.Equal(got, want) || maps.Equal(got, starting) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("claw ps --json: services %v, want %v", got, want)
			}
			time.Sleep(time.Second)
		}
		for _, agent := range []string{"trader", "helper"} {
			env := run(t, "", time.Minute, "docker", "inspect", "-f", "{{range .Config.Env}}{{println .}}{{end}}", p.container(agent))
			for _, secret := range []string{"desk-token-not-secret", "model-key-not-secret"} {
				if strings.Contains(env, secret) {
					t.Errorf("%s's environment holds %q", agent, secret)
				}
			}
		}
	},
	// The records behind the audit shown: the trader's governed calls ok,
	// execute_trade withheld by r1 first, the helper's native call.
	"claw audit --summary": func(t *testing.T, p *pod, _ string) {
		out := run(t, p.dir, time.Minute, p.claw, "audit", "--json")
		var report struct {
			Events []auditlog.Record `json:"events"`
		}
		if err := json.Unmarshal([]byte(out), &report); err != nil {
			t.Fatalf("claw audit --json: %v\n%s", err, out)
		}
		call := func(agent, tool, mode string) bool {
			return slices.ContainsFunc(report.Events, func(r auditlog.Record) bool {
				return r.Type == audit.TypeToolCall && r.ClawID == agent && r.Tool == tool && r.Status == "ok" && r.CallMode() == mode
			})
		}
		for _, c := range [][3]string{
			{"trader", "desk.get_market_context", "mediated"},
			{"trader", "desk.execute_trade", "mediated"},
			{"helper", "desk.get_market_context", "native"},
		} {
			if !call(c[0], c[1], c[2]) {
				t.Errorf("no ok %s tool_call of %s by %s", c[2], c[1], c[0])
			}
		}
		if !slices.ContainsFunc(report.Events, func(r auditlog.Record) bool {
			return r.ClawID == "trader" && slices.ContainsFunc(r.PolicyFiltered, func(f audit.Filtered) bool {
				return f.Tool == "desk.execute_trade" && slices.Equal(f.Rules, []string{"r1"})
			})
		}) {
			t.Error("no trader record lists desk.execute_trade as withheld by r1")
		}
		if slices.ContainsFunc(report.Events, func(r auditlog.Record) bool {
			return r.Type == audit.TypeToolCall && r.ClawID == "helper" && r.Mode != "native"
		}) {
			t.Error("a helper tool call was not native")
		}
	},
	// "This stops and removes the pod's containers and networks. What claw
	// wrote stays in the directory".
	"claw down": func(t *testing.T, p *pod, _ string) {
		for _, f := range []string{".claw-runtime/history/trader/history.jsonl", ".claw-auth/providers.json", "compose.generated.yml"} {
			if _, err := os.Stat(filepath.Join(p.dir, filepath.FromSlash(f))); err != nil {
				t.Errorf("after claw down: %v", err)
			}
		}
		label := "label=com.docker.compose.project=" + p.project
		if ids := run(t, "", time.Minute, "docker", "ps", "-aq", "--filter", label); strings.TrimSpace(ids) != "" {
			t.Errorf("containers left after claw down: %s", ids)
		}
		if ids := run(t, "", time.Minute, "docker", "network", "ls", "-q", "--filter", label); strings.TrimSpace(ids) != "" {
			t.Errorf("networks left after claw down: %s", ids)
		}
	},
}

// TestFirstPodDocParses checks, without Docker, that the walkthrough still
// reads as TestFirstPod expects: its files, its commands, its outputs.
func TestFirstPodDocParses(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), firstPodDoc))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseWalkthrough(string(src))
	if err != nil {
		t.Fatalf("%s: %v", firstPodDoc, err)
	}
	if _, err := rename(steps, "firstpod-test"); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		for _, w := range s.want {
			outputPattern(w) // panics on a pattern that does not compile
		}
	}
}
