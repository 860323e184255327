package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/auditlog"
	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

func init() { registerVerb("audit", func(f *Factory) *cobra.Command { return NewCmdAudit(f, nil) }) }

// AuditOptions are claw audit's inputs.
type AuditOptions struct {
	PodOptions
	// Since is a duration back from now ("2h"), a clock time ("18:21")
	// or an RFC 3339 time (see parseSince).
	Since string
	// Claws and Types filter the events (empty: all).
	Claws []string
	Types []string
	JSON  bool
	// Log is the audit log file ("-": standard input); empty means `docker
	// compose logs cllama` of the running pod.
	Log string
	// SummaryOnly prints the per-agent table only.
	SummaryOnly bool
	// Full prints arguments, results and messages uncut.
	Full bool

	// now is the clock for --since durations and clock times (nil:
	// time.Now).
	now func() time.Time
}

// NewCmdAudit builds `claw audit`; runF replaces auditRun in tests.
func NewCmdAudit(f *Factory, runF func(context.Context, *Factory, *AuditOptions) error) *cobra.Command {
	opts := &AuditOptions{}
	cmd := &cobra.Command{
		Use:   "audit [-f claw-pod.yml] [--since 1h|HH:MM|RFC3339] [--claw AGENT] [--type TYPE] [--json] [--log FILE]",
		Short: "Report what the agents did: requests, tokens, tool calls with arguments and results",
		Long: `Audit merges cllama's audit events (from ` + "`docker compose logs cllama`" + ` of the
running pod, or from --log FILE) with the session history cllama wrote under
.claw-runtime/history, whose tool_trace adds each managed call's arguments and
result. A call present in both is reported once: it is matched by agent,
request id, round and tool name (the n-th such call in the log with the n-th
in the trace).

The text report is a per-agent table (requests, responses, errors, tool calls,
tool errors, tokens in/out, cost, models) with totals, a table per agent and
tool (read-only or side-effect, calls, errors, latency), then every turn (time,
agent, model, status, tokens in/out, cost in US dollars, request id), every
tool call (time, agent, tool, status, latency, request and round, the round's
tokens, arguments, result) and every error. --json prints the summary, the
turns (with cost_usd) and the events with stable field names. Lines that are not audit events are counted and
skipped. Event types: ` + strings.Join(auditlog.Types, ", ") + `.

--since keeps the events from a moment on: a duration back from now (30m,
2h), a clock time in local time (18:21 or 18:21:30: today, or yesterday when
that time is still to come), or an RFC 3339 time (2006-01-02T15:04:05Z).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return auditRun(cmd.Context(), f, opts)
		},
	}
	addPodFlags(cmd, &opts.PodOptions)
	fl := cmd.Flags()
	fl.StringVar(&opts.Since, "since", "", "only events since a duration ago (30m, 2h), a local clock time (18:21; yesterday's if still to come) or an RFC 3339 time")
	fl.StringSliceVar(&opts.Claws, "claw", nil, "only these agents (repeatable, or comma-separated)")
	fl.StringSliceVar(&opts.Types, "type", nil, "only these event types (repeatable, or comma-separated)")
	fl.BoolVar(&opts.JSON, "json", false, "print the summary and events as JSON")
	fl.StringVar(&opts.Log, "log", "", "read cllama's audit log from this file (- for stdin) instead of docker compose logs")
	fl.BoolVar(&opts.SummaryOnly, "summary", false, "print the tables only")
	fl.BoolVar(&opts.Full, "full", false, "print arguments, results and messages without cutting them")
	return cmd
}

// parseSince reads --since: a duration back from now, a clock time
// (HH:MM or HH:MM:SS, in now's time zone: today, or yesterday when that
// is still to come), or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usageErrorf("--since %q: the duration must not be negative", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{"15:04", "15:04:05"} {
		if c, err := time.Parse(layout, s); err == nil {
			t := time.Date(now.Year(), now.Month(), now.Day(), c.Hour(), c.Minute(), c.Second(), 0, now.Location())
			if t.After(now) {
				t = t.AddDate(0, 0, -1)
			}
			return t, nil
		}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, usageErrorf("--since %q: want a duration (30m, 2h), a clock time (18:21: today, or yesterday if that is still to come) or an RFC 3339 time (2006-01-02T15:04:05Z)", s)
}

func auditRun(ctx context.Context, f *Factory, opts *AuditOptions) error {
	now := time.Now
	if opts.now != nil {
		now = opts.now
	}
	since, err := parseSince(opts.Since, now())
	if err != nil {
		return err
	}
	filter := auditlog.Filter{Since: since, Agents: opts.Claws, Types: opts.Types}
	if err := filter.Validate(); err != nil {
		return &UsageError{Err: fmt.Errorf("--type: %w", err)}
	}
	cp, err := openCompiled(opts.File)
	if err != nil {
		return err
	}
	for _, c := range opts.Claws {
		if !cp.hasAgent(c) {
			fmt.Fprintf(f.IO.ErrOut, "warning: --claw %s: no such agent in the compiled pod (agents: %s)\n", termsafe.String(c), strings.Join(termsafe.Strings(cp.Agents), ", "))
		}
	}
	name, err := cp.podName(ctx, f, &opts.PodOptions)
	if err != nil {
		return err
	}
	src := auditlog.Sources{HistoryDir: filepath.ToSlash(compile.HistoryDir)}
	events, stats, err := readAuditLog(ctx, f, cp, name, opts.Log, &src)
	if err != nil {
		return err
	}
	src.LogStats = stats
	entries, hst, err := auditlog.ReadHistoryDir(cp.historyDir())
	if err != nil {
		return err
	}
	src.HistoryFiles, src.HistoryEntries, src.HistoryMalformed = hst.Files, hst.Entries, hst.Malformed
	for _, sk := range hst.Skipped {
		rel, err := filepath.Rel(cp.Dir, sk.Path)
		if err != nil {
			rel = sk.Path
		}
		fmt.Fprintf(f.IO.ErrOut, "warning: %s: %d malformed line(s) skipped (%s)\n", termsafe.String(filepath.ToSlash(rel)), sk.Count, lineWord(sk.At, sk.Count))
	}
	records := auditlog.Merge(events, entries)
	auditlog.MarkEffects(records, cp.toolReadOnly())
	rep := auditlog.NewReport(name, src, filter, records)
	if opts.JSON {
		return rep.WriteJSON(f.IO.Out)
	}
	return rep.WriteText(f.IO.Out, auditlog.TextOptions{SummaryOnly: opts.SummaryOnly, Full: opts.Full})
}

// readAuditLog reads the events of --log, or streams `docker compose logs
// --no-color cllama` through the parser.
func readAuditLog(ctx context.Context, f *Factory, cp *compiledPod, pod, log string, src *auditlog.Sources) ([]audit.Event, auditlog.ReadStats, error) {
	switch log {
	case "-":
		src.Log = "standard input"
		return auditlog.ReadAll(f.IO.In)
	case "":
	default:
		fh, err := os.Open(log)
		if err != nil {
			return nil, auditlog.ReadStats{}, fmt.Errorf("--log: %w", err)
		}
		defer fh.Close()
		src.Log = log
		return auditlog.ReadAll(fh)
	}
	src.Log = "docker compose logs " + compile.CllamaService
	pr, pw := io.Pipe()
	eng, err := f.Engine(ctx, EngineConfig{Dir: cp.Dir, File: compile.GeneratedFile, Project: ProjectName(pod),
		IO: IOStreams{In: nil, Out: pw, ErrOut: f.IO.ErrOut}, Signals: f.Signals})
	if err != nil {
		return nil, auditlog.ReadStats{}, fmt.Errorf("reading cllama's audit log: %w; or pass --log FILE (saved with `claw logs -f %s cllama > FILE`)", err, cp.File)
	}
	go func() { pw.CloseWithError(eng.Compose(ctx, "logs", "--no-color", compile.CllamaService)) }()
	events, st, err := auditlog.ReadAll(pr)
	_ = pr.Close()
	if err != nil {
		return nil, st, fmt.Errorf("reading cllama's audit log: %w; is the pod running (`claw up`)? or pass --log FILE", err)
	}
	return events, st, nil
}

// podName is the pod name recorded at compile time, else (a pod without
// agents) the pod file's own.
func (cp *compiledPod) podName(ctx context.Context, f *Factory, o *PodOptions) (string, error) {
	if cp.Name != "" {
		return cp.Name, nil
	}
	p, err := o.load(ctx, f.Env)
	if err != nil {
		return "", err
	}
	return p.Name, nil
}
