package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/auditlog"
	"github.com/clawdapus/clawgo/internal/spend"
)

func init() {
	registerVerb("spend", func(f *Factory) *cobra.Command { return NewCmdSpend(f) })
}

// SpendOptions are claw spend's inputs.
type SpendOptions struct {
	PodOptions
	Since string
	By    string
	JSON  bool
}

// NewCmdSpend builds `claw spend`.
func NewCmdSpend(f *Factory) *cobra.Command {
	opts := &SpendOptions{}
	cmd := &cobra.Command{
		Use:   "spend [-f claw-pod.yml] [--since DURATION|DATE] [--by agent|model|day] [--json]",
		Short: "Print what the pod's agents spent on models, from session history",
		Long: `Spend reads the session history cllama recorded (.claw-runtime/history),
so it works with the pod down, and prints requests, tokens and cost in US
dollars per agent, model or UTC day, with a total. Costs are what cllama
computed from each exchange's usage at the prices it knew (its built-in
table and x-claw.cllama-defaults.pricing); exchanges with a model that has
no price are counted under UNPRICED, their cost unknown.

--since keeps the exchanges since a duration ago (24h, 7d), a date
(2026-03-01, UTC) or an RFC 3339 time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return spendRun(cmd.Context(), f, opts) },
	}
	addPodFlags(cmd, &opts.PodOptions)
	cmd.Flags().StringVar(&opts.Since, "since", "", "only exchanges since a duration ago (24h, 7d), a date or an RFC 3339 time")
	cmd.Flags().StringVar(&opts.By, "by", "agent", "group by "+strings.Join(spend.ReportBy, ", "))
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON document")
	return cmd
}

func spendRun(_ context.Context, f *Factory, opts *SpendOptions) error {
	since, err := spend.ParseSince(opts.Since, time.Now())
	if err != nil {
		return usageErrorf("%v", err)
	}
	cp, err := openCompiled(opts.File)
	if err != nil {
		return err
	}
	entries, st, err := auditlog.ReadHistoryDir(cp.historyDir())
	if err != nil {
		return err
	}
	if st.Malformed > 0 {
		fmt.Fprintf(f.IO.ErrOut, "warning: %d malformed history line(s) skipped\n", st.Malformed)
	}
	r, err := spend.Summarize(entries, since, opts.By)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if opts.JSON {
		return r.WriteJSON(f.IO.Out)
	}
	return r.WriteTable(f.IO.Out)
}
