package auditlog

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

// Turn is one runner request of an agent to a model and how it ended:
// its outcome event (response or error), with what it cost. A mediated
// turn's tokens and cost cover all its hidden rounds.
type Turn struct {
	TS         time.Time `json:"ts"`
	Agent      string    `json:"agent"`
	RequestID  string    `json:"request_id"`
	Format     string    `json:"format,omitempty"`
	Model      string    `json:"model,omitempty"`
	StatusCode int       `json:"status_code,omitempty"`
	// Error is the error event's message (a turn that failed).
	Error     string `json:"error,omitempty"`
	TokensIn  *int   `json:"tokens_in,omitempty"`
	TokensOut *int   `json:"tokens_out,omitempty"`
	// CostUSD is what the turn's model calls cost, in dollars: omitted
	// when no call was costed (refused before one), null with
	// CostUnknown when the model has no price.
	CostUSD     audit.Cost `json:"cost_usd,omitzero"`
	CostUnknown bool       `json:"cost_unknown,omitempty"`
}

// Turns lists the turns of rs in the order they ended: each agent's model
// request, from its last response or error event (the errors before it
// are retries; requests on stored objects, a native MCP call, and
// requests no agent was identified for are not turns).
func Turns(rs []Record) []Turn {
	last := map[exchangeKey]int{}
	for i := range rs {
		r := &rs[i]
		if (r.Type == audit.TypeResponse || r.Type == audit.TypeError) && r.RequestID != "" && r.ClawID != "" &&
			r.Route == "" && r.Format != history.FormatMCP {
			last[exchangeKey{r.ClawID, r.RequestID}] = i
		}
	}
	out := make([]Turn, 0, len(last))
	for i := range rs {
		r := &rs[i]
		if j, ok := last[exchangeKey{r.ClawID, r.RequestID}]; !ok || j != i {
			continue
		}
		t := Turn{TS: r.TS, Agent: r.ClawID, RequestID: r.RequestID, Format: r.Format, Model: r.Model, StatusCode: r.StatusCode,
			TokensIn: r.TokensIn, TokensOut: r.TokensOut, CostUSD: r.CostUSD, CostUnknown: r.CostUnknown || r.CostUSD.Unknown()}
		if r.Type == audit.TypeError {
			t.Error = r.Error
		}
		out = append(out, t)
	}
	return out
}

// CostText is the turn's cost for the text report: dollars, "unpriced"
// (a model with no price), or "-" (nothing costed).
func (t Turn) CostText() string {
	switch {
	case t.CostUSD.Known:
		return audit.FormatUSD(t.CostUSD.MicroUSD)
	case t.CostUnknown:
		return "unpriced"
	}
	return "-"
}

// writeTurns writes the table of turns.
func writeTurns(w io.Writer, ts []Turn) {
	if len(ts) == 0 {
		return
	}
	fmt.Fprintf(w, "\nturns (%d):\n", len(ts))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TIME\tAGENT\tMODEL\tSTATUS\tTOKENS IN\tTOKENS OUT\tCOST (USD)\tREQUEST")
	num := func(p *int) string {
		if p == nil {
			return "-"
		}
		return strconv.Itoa(*p)
	}
	for _, t := range ts {
		status := "-"
		switch {
		case t.StatusCode != 0:
			status = strconv.Itoa(t.StatusCode)
		case t.Error != "":
			status = "error"
		}
		model := termsafe.String(t.Model)
		if model == "" {
			model = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", stamp(t.TS), termsafe.String(t.Agent), model, status,
			num(t.TokensIn), num(t.TokensOut), t.CostText(), termsafe.String(t.RequestID))
	}
	_ = tw.Flush()
}
