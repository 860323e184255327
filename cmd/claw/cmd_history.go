package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

func init() {
	registerVerb("history", func(f *Factory) *cobra.Command { return NewCmdHistory(f, nil) })
}

// HistoryOptions are claw history's inputs.
type HistoryOptions struct {
	PodOptions
	Agent string
	// After is an RFC 3339 time or an entry id: only entries after it.
	After string
	// Limit bounds the entries printed (0: all).
	Limit int
}

// NewCmdHistory builds `claw history`; runF replaces historyRun in tests.
func NewCmdHistory(f *Factory, runF func(context.Context, *Factory, *HistoryOptions) error) *cobra.Command {
	opts := &HistoryOptions{}
	cmd := &cobra.Command{
		Use:   "history <agent> [-f claw-pod.yml] [--after RFC3339|ID] [--limit N]",
		Short: "Export an agent's session history as NDJSON, newest last",
		Long: `History prints the session history cllama recorded for one agent
(.claw-runtime/history/<agent>/history.jsonl) as NDJSON: one entry a line,
ordered by time, newest last. Each entry carries a stable "id" (the request id
cllama gave the exchange), its request and response, token usage and, for
mediated turns, the tool_trace of every managed call.

--after keeps the entries after a time (RFC 3339) or after the entry with that
id; --limit N keeps the first N of those, so "--after <last id> --limit N"
pages forward. Without --after, --limit N keeps the N newest.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%s takes one argument, the agent id, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Agent = args[0]
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return historyRun(cmd.Context(), f, opts)
		},
	}
	addPodFlags(cmd, &opts.PodOptions)
	cmd.Flags().StringVar(&opts.After, "after", "", "only entries after this RFC 3339 time or entry id")
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "at most N entries (0: all)")
	return cmd
}

func historyRun(_ context.Context, f *Factory, opts *HistoryOptions) error {
	if opts.Limit < 0 {
		return usageErrorf("--limit %d: must not be negative", opts.Limit)
	}
	cp, err := openCompiled(opts.File)
	if err != nil {
		return err
	}
	if !cp.hasAgent(opts.Agent) {
		known := "none"
		if len(cp.Agents) > 0 {
			known = strings.Join(termsafe.Strings(cp.Agents), ", ")
		}
		return usageErrorf("%s: no agent %q in the compiled pod (agents: %s)", opts.File, opts.Agent, known)
	}
	// Every file of the agent: history.jsonl, and one per cllama replica
	// when several share the directory.
	entries, files, err := history.ReadAgent(cp.historyDir(), opts.Agent)
	if err != nil {
		return err
	}
	for _, st := range files {
		if st.Malformed > 0 {
			fmt.Fprintf(f.IO.ErrOut, "warning: %s: %d malformed line(s) skipped (%s); a write cut short by a crash or a full disk leaves one\n",
				termsafe.String(st.Path), st.Malformed, lineWord(st.MalformedAt, st.Malformed))
		}
	}
	entries = orderHistory(opts.Agent, entries)
	entries, err = selectHistory(entries, opts.After, opts.Limit)
	if err != nil {
		return err
	}
	return writeNDJSON(f.IO.Out, entries)
}

// writeNDJSON writes entries one a line, each escaped for a terminal
// (termsafe.JSONDocument): bodies are kept as the exchange sent them, so
// they may hold DEL, C1 or format characters raw, or bytes that are not
// UTF-8, which encoding/json copies as they are.
func writeNDJSON(w io.Writer, entries []history.Entry) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, e := range entries {
		b.Reset()
		if err := enc.Encode(e); err != nil {
			return err
		}
		if _, err := w.Write(termsafe.JSONDocument(b.Bytes())); err != nil {
			return err
		}
	}
	return nil
}

// orderHistory gives every entry an id and orders them by time, newest
// last. cllama appends an entry when its exchange ends but stamps it with
// the exchange's start, so file order is not time order when exchanges
// overlap; ties keep file order. An entry written without an id gets
// "<agent>#<n>", n its 1-based position among the file's well-formed
// entries, which is stable because the file is only ever appended to.
func orderHistory(agent string, entries []history.Entry) []history.Entry {
	for i := range entries {
		if entries[i].ID == "" {
			entries[i].ID = fmt.Sprintf("%s#%d", agent, i+1)
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Timestamp.Before(entries[j].Timestamp) })
	return entries
}

// selectHistory applies --after and --limit to ordered entries.
func selectHistory(entries []history.Entry, after string, limit int) ([]history.Entry, error) {
	if after != "" {
		if t, err := time.Parse(time.RFC3339, after); err == nil {
			i := sort.Search(len(entries), func(i int) bool { return entries[i].Timestamp.After(t) })
			entries = entries[i:]
		} else {
			found := -1
			for i, e := range entries {
				if e.ID == after {
					found = i
					break
				}
			}
			if found < 0 {
				return nil, usageErrorf("--after %q: neither an RFC 3339 time nor the id of an entry of this history", after)
			}
			entries = entries[found+1:]
		}
		if limit > 0 && len(entries) > limit {
			entries = entries[:limit]
		}
		return entries, nil
	}
	if limit > 0 && len(entries) > limit {
		entries = entries[len(entries)-limit:]
	}
	return entries, nil
}

// lineWord names skipped lines for a warning: "line 7", "lines 3 and 9".
func lineWord(at []int, total int) string {
	if total == 1 {
		return "line " + history.LineList(at, total)
	}
	return "lines " + history.LineList(at, total)
}
