package spend

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

// Report groupings (claw spend --by).
var ReportBy = []string{"agent", "model", "day"}

// Row is what one group of exchanges spent.
type Row struct {
	Key       string `json:"key"`
	Requests  int    `json:"requests"`
	TokensIn  int64  `json:"tokens_in"`
	TokensOut int64  `json:"tokens_out"`
	// CostUSD sums the priced exchanges; Unpriced counts those whose
	// model had no price (cost_unknown), which it leaves out.
	CostUSD  audit.Cost `json:"cost_usd"`
	Unpriced int        `json:"unpriced,omitempty"`
}

// Report is spend read from session history.
type Report struct {
	Since time.Time `json:"since,omitzero"`
	By    string    `json:"by"`
	Rows  []Row     `json:"rows"`
	Total Row       `json:"total"`
}

// Summarize groups entries (at or after since; zero: all) by agent, model
// or UTC day. Native tool calls (no model) are left out.
func Summarize(entries []history.Entry, since time.Time, by string) (*Report, error) {
	key := map[string]func(e *history.Entry) string{
		"agent": func(e *history.Entry) string { return e.AgentID },
		"model": func(e *history.Entry) string { return e.Model },
		"day":   func(e *history.Entry) string { return e.Timestamp.UTC().Format("2006-01-02") },
	}[by]
	if key == nil {
		return nil, fmt.Errorf("--by %q: use one of %s", by, strings.Join(ReportBy, ", "))
	}
	rows := map[string]*Row{}
	r := &Report{Since: since, By: by, Total: Row{Key: "total", CostUSD: audit.KnownCost(0)}}
	for i := range entries {
		e := &entries[i]
		if e.Format == history.FormatMCP || (!since.IsZero() && e.Timestamp.Before(since)) {
			continue
		}
		k := key(e)
		row := rows[k]
		if row == nil {
			row = &Row{Key: k, CostUSD: audit.KnownCost(0)}
			rows[k] = row
		}
		for _, x := range []*Row{row, &r.Total} {
			x.Requests++
			x.TokensIn += int64(e.Usage.PromptTokens)
			x.TokensOut += int64(e.Usage.CompletionTokens)
			if e.CostUSD.Known {
				x.CostUSD = audit.KnownCost(x.CostUSD.MicroUSD + e.CostUSD.MicroUSD)
			}
			if e.CostUnknown {
				x.Unpriced++
			}
		}
	}
	for _, row := range rows {
		r.Rows = append(r.Rows, *row)
	}
	sort.Slice(r.Rows, func(i, j int) bool { return r.Rows[i].Key < r.Rows[j].Key })
	return r, nil
}

// WriteTable prints the report for a terminal, every key escaped.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tREQUESTS\tTOKENS IN\tTOKENS OUT\tCOST (USD)\tUNPRICED\n", strings.ToUpper(r.By))
	for _, row := range append(r.Rows, r.Total) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\n", termsafe.String(row.Key), row.Requests, row.TokensIn, row.TokensOut, audit.FormatUSD(row.CostUSD.MicroUSD), row.Unpriced)
	}
	return tw.Flush()
}

// WriteJSON prints the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	if r.Rows == nil {
		r.Rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ParseSince reads --since: a duration back from now (24h, 90m, 7d), a
// date (2026-03-01, midnight UTC) or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && n >= 0 && fmt.Sprint(n) == days {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: write a duration (24h, 7d), a date (2026-03-01) or an RFC 3339 time", s)
}
