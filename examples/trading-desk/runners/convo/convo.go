// Package convo is the part the reference runners share: the scripted
// turns they play, the runner-native tool they carry, and the transcript they
// print. Each runner speaks its API through the official SDK; only the
// conversation bookkeeping lives here.
package convo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Turn is one user message and whether the runner asks for a stream.
type Turn struct {
	User   string `json:"user"`
	Stream bool   `json:"stream"`
}

// Config is read from the environment once at start-up.
type Config struct {
	Name     string
	Model    string
	Turns    []Turn
	MaxSteps int
}

// LoadConfig reads RUNNER_NAME, MODEL and RUNNER_TURNS (a JSON array of
// {"user","stream"}). MaxSteps, the model calls a turn may take, is 6.
func LoadConfig(defaultTurns []Turn) (Config, error) {
	c := Config{Name: os.Getenv("RUNNER_NAME"), Model: os.Getenv("MODEL"), Turns: defaultTurns, MaxSteps: 6}
	if c.Name == "" {
		c.Name, _ = os.Hostname()
	}
	if c.Model == "" {
		return c, errors.New("MODEL must be set to <provider>/<model>, e.g. sim/scripted")
	}
	if raw := os.Getenv("RUNNER_TURNS"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &c.Turns); err != nil {
			return c, fmt.Errorf("RUNNER_TURNS: must be a JSON array of {\"user\":...,\"stream\":bool}: %w", err)
		}
	}
	return c, nil
}

// Notes is the runner-native tool both runners carry: save_note keeps a note
// in the runner's own memory. cllama never executes it.
type Notes struct {
	mu    sync.Mutex
	notes []string
}

// NoteToolName is the native tool's name.
const NoteToolName = "save_note"

// NoteToolDescription and NoteToolSchema describe save_note to the model.
const NoteToolDescription = "Save a short note in the runner's local notebook"

// NoteToolProperties is save_note's input properties.
var NoteToolProperties = map[string]any{"text": map[string]any{"type": "string", "description": "the note"}}

// Run executes a native call; unknown tools get an error result so the
// model can recover.
func (n *Notes) Run(name string, args []byte) (string, bool) {
	if name != NoteToolName {
		return fmt.Sprintf("unknown tool %q: this runner only has %s", name, NoteToolName), true
	}
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.Text == "" {
		return "save_note needs {\"text\": \"...\"}", true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes = append(n.notes, in.Text)
	return fmt.Sprintf("saved note #%d", len(n.notes)), false
}

// Transcript prints the conversation and collects a machine-readable summary.
type Transcript struct {
	Out     io.Writer
	Runner  string
	Turns   []TurnResult `json:"turns"`
	Failure string       `json:"failure,omitempty"`
}

// TurnResult is what happened in one turn.
type TurnResult struct {
	User        string   `json:"user"`
	Stream      bool     `json:"stream"`
	Answer      string   `json:"answer"`
	NativeCalls []string `json:"native_calls,omitempty"`
	// MCPCalls are the tools a runner called itself over MCP (native pod
	// tools, by their canonical names); NativeCalls are its own tools.
	MCPCalls []string `json:"mcp_calls,omitempty"`
}

// Line prints one transcript line.
func (t *Transcript) Line(role, text string) {
	fmt.Fprintf(t.Out, "[%s] %-9s %s\n", t.Runner, role+":", strings.TrimSpace(text))
}

// Summary prints the one-line JSON summary the end-to-end test reads.
func (t *Transcript) Summary() {
	b, _ := json.Marshal(struct {
		Runner  string       `json:"runner"`
		Turns   []TurnResult `json:"turns"`
		Failure string       `json:"failure,omitempty"`
	}{t.Runner, t.Turns, t.Failure})
	fmt.Fprintf(t.Out, "RUNNER_SUMMARY %s\n", b)
}

// Retry runs call until it succeeds, the error is not a connection failure,
// or the deadline passes: the runner may start before cllama is listening.
func Retry[T any](ctx context.Context, wait time.Duration, call func() (T, error)) (T, error) {
	deadline := time.Now().Add(wait)
	for {
		v, err := call()
		var op *net.OpError
		if err == nil || !errors.As(err, &op) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Main is a runner's whole process: read the configuration, play the turns
// with run until done or signalled, print the summary, and exit 0 only when
// every turn got an answer (2 for a configuration error).
func Main(name string, defaultTurns []Turn, run func(context.Context, Config, *Transcript) error) {
	cfg, err := LoadConfig(defaultTurns)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	t := &Transcript{Out: os.Stdout, Runner: cfg.Name}
	if err := run(ctx, cfg, t); err != nil {
		t.Failure = err.Error()
	}
	t.Summary()
	if t.Failure != "" {
		stop()
		os.Exit(1)
	}
}
