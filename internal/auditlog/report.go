package auditlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

// Sources says what a report was built from and what was skipped.
type Sources struct {
	// Log names the audit log read ("docker compose logs cllama" or a
	// file); empty when none was read.
	Log      string    `json:"log"`
	LogStats ReadStats `json:"log_stats"`
	// HistoryDir is the session-history directory, relative to the pod.
	HistoryDir       string `json:"history_dir"`
	HistoryFiles     int    `json:"history_files"`
	HistoryEntries   int    `json:"history_entries"`
	HistoryMalformed int    `json:"history_malformed"`
}

// Report is what `claw audit` prints: the per-agent summary of the
// filtered records, and the records.
type Report struct {
	Pod     string  `json:"pod"`
	Sources Sources `json:"sources"`
	Filter  Filter  `json:"filter"`
	Summary Summary `json:"summary"`
	// Turns are the agents' model requests, each with its cost.
	Turns  []Turn   `json:"turns"`
	Events []Record `json:"events"`
}

// NewReport filters rs and summarises what remains.
func NewReport(pod string, src Sources, f Filter, rs []Record) *Report {
	kept := f.Apply(rs)
	return &Report{Pod: pod, Sources: src, Filter: f, Summary: Summarize(kept), Turns: Turns(kept), Events: kept}
}

// WriteJSON writes the report as one indented JSON document, escaped for
// a terminal (termsafe.JSONDocument): still valid JSON of the same values.
func (r *Report) WriteJSON(w io.Writer) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSONDocument(b.Bytes()))
	return err
}

// TextOptions shape the text report.
type TextOptions struct {
	// SummaryOnly prints the per-agent table and nothing else.
	SummaryOnly bool
	// Full prints arguments, results and error messages whole; by default
	// each is cut to MaxTextValue characters.
	Full bool
}

// MaxTextValue bounds an argument, result or message in the text report.
const MaxTextValue = 160

// WriteText writes the per-agent table with totals, then every turn
// (time, agent, model, status, tokens, what it cost, request id), every
// tool call (time, agent, tool, status, latency, arguments, result, the
// round's tokens) and every error. Every value an agent, a model or a service wrote
// is escaped for the terminal (termsafe), so none spans lines, moves the
// cursor or breaks a table's columns.
func (r *Report) WriteText(w io.Writer, o TextOptions) error {
	ew := &errWriter{w: w}
	r.header(ew)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tREQUESTS\tRESPONSES\tERRORS\tTOOL CALLS\tTOOL ERRORS\tTOKENS IN\tTOKENS OUT\tCOST (USD)\tMODELS")
	row := func(s AgentSummary) {
		models := strings.Join(termsafe.Strings(s.Models), ", ")
		if models == "" {
			models = "-"
		}
		cost := audit.FormatUSD(s.CostUSD.MicroUSD)
		if s.Unpriced > 0 {
			cost += fmt.Sprintf(" (+%d unpriced)", s.Unpriced)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", termsafe.String(s.Agent), s.Requests, s.Responses, s.Errors, s.ToolCalls, s.ToolErrors, s.TokensIn, s.TokensOut, cost, models)
	}
	for _, s := range r.Summary.Agents {
		row(s)
	}
	row(r.Summary.Total)
	_ = tw.Flush()
	if len(r.Summary.Tools) > 0 {
		fmt.Fprintln(ew)
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "AGENT\tTOOL\tMODE\tEFFECT\tCALLS\tERRORS\tLATENCY TOTAL\tLATENCY MAX")
		for _, t := range r.Summary.Tools {
			eff := t.Effect
			if eff == "" {
				eff = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%dms\t%dms\n", termsafe.String(t.Agent), termsafe.String(t.Tool), termsafe.String(t.Mode), termsafe.String(eff), t.Calls, t.Errors, t.LatencyMSTotal, t.LatencyMSMax)
		}
		_ = tw.Flush()
	}
	if feeds := summarizeFeeds(r.Events); len(feeds) > 0 {
		fmt.Fprintln(ew)
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "AGENT\tFEED\tFETCHES\tFAILED\tCACHED\tSTALE\tBYTES\tLATENCY MAX")
		for _, f := range feeds {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%dms\n", termsafe.String(f.agent), termsafe.String(f.feed), f.fetches, f.failed, f.cached, f.stale, f.bytes, f.latencyMax)
		}
		_ = tw.Flush()
	}
	if o.SummaryOnly {
		return ew.err
	}
	writeTurns(ew, r.Turns)
	var calls, errs []*Record
	for i := range r.Events {
		switch r.Events[i].Type {
		case audit.TypeToolCall:
			calls = append(calls, &r.Events[i])
		case audit.TypeError, audit.TypeManifestError:
			errs = append(errs, &r.Events[i])
		}
	}
	if len(calls) > 0 {
		fmt.Fprintf(ew, "\ntool calls (%d):\n", len(calls))
		for _, c := range calls {
			r.writeCall(ew, c, o)
		}
	}
	var withheld []*Record
	for i := range r.Events {
		if len(r.Events[i].PolicyFiltered) > 0 {
			withheld = append(withheld, &r.Events[i])
		}
	}
	if len(withheld) > 0 {
		fmt.Fprintf(ew, "\ntools withheld by tool policy (%d requests):\n", len(withheld))
		for _, e := range withheld {
			agent := e.ClawID
			if agent == "" {
				agent = NoAgent
			}
			for _, f := range e.PolicyFiltered {
				line := fmt.Sprintf("  %s  %s  %s  rules %s", stamp(e.TS), termsafe.String(agent), termsafe.String(f.Tool), strings.Join(termsafe.Strings(f.Rules), ","))
				if f.Error != "" {
					line += "  (failed: " + cut(f.Error, o.Full) + ")"
				}
				fmt.Fprintln(ew, line)
			}
		}
	}
	writeFallbacks(ew, r.Events)
	writeRepairs(ew, r.Events)
	writeApprovals(ew, r.Events, o.Full)
	if len(errs) > 0 {
		fmt.Fprintf(ew, "\nerrors (%d):\n", len(errs))
		for _, e := range errs {
			agent := e.ClawID
			if agent == "" {
				agent = NoAgent
			}
			status := ""
			if e.StatusCode != 0 {
				status = " " + strconv.Itoa(e.StatusCode)
			}
			fmt.Fprintf(ew, "  %s  %s  %s%s  %s\n", stamp(e.TS), termsafe.String(agent), termsafe.String(e.Type), status, cut(e.Error, o.Full))
		}
	}
	return ew.err
}

func (r *Report) header(w io.Writer) {
	s := r.Sources
	var parts []string
	if s.Log != "" {
		p := fmt.Sprintf("%d events from %s", s.LogStats.Events, termsafe.String(s.Log))
		if s.LogStats.Malformed > 0 {
			p += fmt.Sprintf(", %d malformed line(s) skipped", s.LogStats.Malformed)
		}
		parts = append(parts, p)
	}
	h := fmt.Sprintf("%d history entries from %d file(s) under %s", s.HistoryEntries, s.HistoryFiles, termsafe.String(s.HistoryDir))
	if s.HistoryMalformed > 0 {
		h += fmt.Sprintf(", %d malformed line(s) skipped", s.HistoryMalformed)
	}
	parts = append(parts, h)
	fmt.Fprintf(w, "pod %s: %s\n", termsafe.String(r.Pod), strings.Join(parts, "; "))
	var f []string
	if !r.Filter.Since.IsZero() {
		f = append(f, "since "+stamp(r.Filter.Since))
	}
	if len(r.Filter.Agents) > 0 {
		f = append(f, "claw "+strings.Join(termsafe.Strings(r.Filter.Agents), ","))
	}
	if len(r.Filter.Types) > 0 {
		f = append(f, "type "+strings.Join(termsafe.Strings(r.Filter.Types), ","))
	}
	if len(f) > 0 {
		fmt.Fprintf(w, "filter: %s\n", strings.Join(f, ", "))
	}
	fmt.Fprintln(w)
}

func (r *Report) writeCall(w io.Writer, c *Record, o TextOptions) {
	latency := "-"
	if c.LatencyMS != nil {
		latency = strconv.FormatInt(*c.LatencyMS, 10) + "ms"
	}
	status := termsafe.String(c.Status)
	if status == "" {
		status = "?"
	}
	agent := c.ClawID
	if agent == "" {
		agent = NoAgent
	}
	tool := termsafe.String(c.Tool)
	if c.Effect != "" {
		tool += " [" + termsafe.String(c.Effect) + "]"
	}
	fmt.Fprintf(w, "  %s  %s  %s  %s  %s  %s\n", stamp(c.TS), termsafe.String(agent), tool, termsafe.String(c.CallMode()), status, latency)
	ctx := []string{}
	if c.RequestID != "" {
		ctx = append(ctx, "request "+termsafe.String(c.RequestID))
	}
	if c.Round > 0 {
		r := "round " + strconv.Itoa(c.Round)
		if c.StartMS != nil {
			// Calls of a round whose spans overlap ran concurrently.
			r += fmt.Sprintf(" (started +%dms, %s)", *c.StartMS, latency)
		}
		ctx = append(ctx, r)
	}
	if c.Model != "" {
		ctx = append(ctx, "model "+termsafe.String(c.Model))
	}
	if c.RoundTokensIn != nil && c.RoundTokensOut != nil {
		ctx = append(ctx, fmt.Sprintf("round tokens %d in / %d out", *c.RoundTokensIn, *c.RoundTokensOut))
	}
	if c.DuplicateOfRound > 0 {
		ctx = append(ctx, fmt.Sprintf("duplicate of round %d, not executed", c.DuplicateOfRound))
	}
	if a := c.Approval; a != nil {
		s := "approval " + termsafe.String(a.ID) + " " + termsafe.String(a.Decision)
		if a.By != "" {
			s += " by " + termsafe.String(a.By)
		}
		ctx = append(ctx, s)
	}
	ctx = append(ctx, "from "+termsafe.String(c.Source))
	fmt.Fprintf(w, "    %s\n", strings.Join(ctx, ", "))
	if c.Arguments != nil {
		fmt.Fprintf(w, "    arguments: %s\n", cutJSON(c.Arguments, o.Full))
	}
	if c.ModelArguments != nil {
		fmt.Fprintf(w, "    model sent: %s (cllama executed the arguments above)\n", cutJSON(c.ModelArguments, o.Full))
	}
	if c.Result != nil {
		fmt.Fprintf(w, "    result:    %s\n", cutJSON(c.Result, o.Full))
	}
	if c.Arguments == nil && c.Result == nil {
		fmt.Fprintln(w, "    arguments and result: not in session history")
	}
}

// writeRepairs lists the file_repaired events: the partial last lines
// cllama cut off its files at start-up (a crash cut their writes short).
func writeRepairs(w io.Writer, rs []Record) {
	var cuts []*Record
	for i := range rs {
		if rs[i].Type == audit.TypeFileRepaired {
			cuts = append(cuts, &rs[i])
		}
	}
	if len(cuts) == 0 {
		return
	}
	fmt.Fprintf(w, "\nfiles repaired: a partial last line, never acknowledged, cut off (%d):\n", len(cuts))
	for _, e := range cuts {
		agent := e.ClawID
		if agent == "" {
			agent = NoAgent
		}
		n, off := 0, int64(0)
		if e.Bytes != nil {
			n = *e.Bytes
		}
		if e.Offset != nil {
			off = *e.Offset
		}
		fmt.Fprintf(w, "  %s  %s  %s  %d bytes cut at offset %d\n", stamp(e.TS), agent, e.File, n, off)
	}
}

// stamp formats a time for the text report: UTC, milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// cut shortens s to MaxTextValue characters unless full, saying how long
// it was, and escapes it for the terminal.
func cut(s string, full bool) string {
	kept, more := cutAt(s, full)
	return termsafe.String(kept) + more
}

// cutJSON is cut for a JSON value: compacted, and escaped so that it stays
// JSON (a value that is not JSON is escaped as any other).
func cutJSON(raw json.RawMessage, full bool) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return cut(string(raw), full)
	}
	kept, more := cutAt(b.String(), full)
	return termsafe.JSON(kept) + more
}

// cutAt splits s after MaxTextValue characters (a byte that is not UTF-8
// counts as one) unless full or shorter: what is kept, and the note saying
// how long s was.
func cutAt(s string, full bool) (kept, more string) {
	if full {
		return s, ""
	}
	n := 0
	for i := range s {
		if n == MaxTextValue {
			return s[:i], fmt.Sprintf("… (%d bytes)", len(s))
		}
		n++
	}
	return s, ""
}

// errWriter keeps the first write error so rendering code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// feedRow is one agent's fetches of one feed, for the text report (the
// JSON report carries every feed_fetch event whole).
type feedRow struct {
	agent, feed                                       string
	fetches, failed, cached, stale, bytes, latencyMax int
}

// summarizeFeeds counts feed_fetch events per agent and feed, in order of
// agent then feed.
func summarizeFeeds(rs []Record) []feedRow {
	idx := map[[2]string]int{}
	var out []feedRow
	for i := range rs {
		e := &rs[i]
		if e.Type != audit.TypeFeedFetch {
			continue
		}
		agent := e.ClawID
		if agent == "" {
			agent = NoAgent
		}
		k := [2]string{agent, e.Feed}
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, feedRow{agent: agent, feed: e.Feed})
		}
		f := &out[j]
		f.fetches++
		if e.Status != "" && e.Status != "ok" || e.Error != "" {
			f.failed++
		}
		if e.Cached {
			f.cached++
		}
		if e.Stale {
			f.stale++
		}
		if e.Bytes != nil {
			f.bytes += *e.Bytes
		}
		if e.LatencyMS != nil && int(*e.LatencyMS) > f.latencyMax {
			f.latencyMax = int(*e.LatencyMS)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].agent != out[b].agent {
			return out[a].agent < out[b].agent
		}
		return out[a].feed < out[b].feed
	})
	return out
}

// writeFallbacks lists the model calls that went to a fallback target:
// when, the agent, from which model to which, and why.
func writeFallbacks(w io.Writer, events []Record) {
	var steps []*Record
	for i := range events {
		if events[i].Type == audit.TypeFallback {
			steps = append(steps, &events[i])
		}
	}
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(w, "\nfallbacks (%d):\n", len(steps))
	for _, e := range steps {
		agent := e.ClawID
		if agent == "" {
			agent = NoAgent
		}
		line := fmt.Sprintf("  %s  %s  %s -> %s  %s", stamp(e.TS), termsafe.String(agent), termsafe.String(e.FallbackFrom), termsafe.String(e.Model), termsafe.String(e.FallbackReason))
		if e.StatusCode != 0 {
			line += fmt.Sprintf(" (%d)", e.StatusCode)
		}
		fmt.Fprintln(w, line)
	}
}

// writeApprovals lists how held calls' approval requests ended: who
// approved or denied what, why, and after how long.
func writeApprovals(w io.Writer, rs []Record, full bool) {
	var decided []*Record
	for i := range rs {
		if rs[i].Type == audit.TypeApprovalDecided && rs[i].Approval != nil {
			decided = append(decided, &rs[i])
		}
	}
	if len(decided) == 0 {
		return
	}
	fmt.Fprintf(w, "\napprovals (%d):\n", len(decided))
	for _, e := range decided {
		a := e.Approval
		agent := e.ClawID
		if agent == "" {
			agent = NoAgent
		}
		line := fmt.Sprintf("  %s  %s  %s  %s", stamp(e.TS), termsafe.String(agent), termsafe.String(e.Tool), termsafe.String(a.Decision))
		if a.By != "" {
			line += " by " + termsafe.String(a.By)
		}
		if a.WaitMS != nil {
			line += fmt.Sprintf(" after %s", (time.Duration(*a.WaitMS) * time.Millisecond).Round(time.Millisecond))
		}
		line += "  approval " + termsafe.String(a.ID)
		if a.Reason != "" {
			line += "  reason: " + cut(a.Reason, full)
		}
		fmt.Fprintln(w, line)
	}
}
