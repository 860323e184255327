package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

func init() {
	registerVerb("approvals", func(f *Factory) *cobra.Command { return NewCmdApprovals(f) })
	registerVerb("approve", func(f *Factory) *cobra.Command { return NewCmdDecide(f, true) })
	registerVerb("deny", func(f *Factory) *cobra.Command { return NewCmdDecide(f, false) })
}

// ApprovalsOptions are claw approvals' inputs.
type ApprovalsOptions struct {
	PodOptions
	JSON  bool
	Watch bool
	// every is --watch's polling interval (tests shorten it).
	every time.Duration
}

// NewCmdApprovals builds `claw approvals`.
func NewCmdApprovals(f *Factory) *cobra.Command {
	opts := &ApprovalsOptions{every: 2 * time.Second}
	cmd := &cobra.Command{
		Use:   "approvals [-f claw-pod.yml] [--json] [--watch]",
		Short: "List the tool calls waiting for a person's decision",
		Long: `Approvals lists the calls cllama holds for a person's decision (pod keys
approve: and x-claw.tool-policy.approve-destructive): id, agent, tool, the
arguments exactly as the service would receive them, their SHA-256, the rule
that held the call and when it expires. Decide with ` + "`claw approve ID`" + ` or
` + "`claw deny ID --reason TEXT`" + `. --watch keeps listing as calls are held and decided
(until interrupted); --json prints {"approvals": [...]} (with --watch, one
document per change).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return approvalsRun(cmd.Context(), f, opts) },
	}
	addPodFlags(cmd, &opts.PodOptions)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the pending approvals as JSON")
	cmd.Flags().BoolVar(&opts.Watch, "watch", false, "keep listing as calls are held and decided")
	return cmd
}

// DecideOptions are claw approve's and claw deny's inputs.
type DecideOptions struct {
	PodOptions
	Reason string
	By     string
}

// NewCmdDecide builds `claw approve` (approve) or `claw deny`.
func NewCmdDecide(f *Factory, approve bool) *cobra.Command {
	opts := &DecideOptions{}
	cmd := &cobra.Command{
		Use:   "approve ID [--note TEXT]",
		Short: "Approve a held tool call: it runs, with exactly the arguments shown",
		Long: `Approve lets the held call ID run, with exactly the arguments ` + "`claw approvals`" + `
showed (the decision is bound to their SHA-256; a decision is single-use).
It fails when the call was already decided, expired or its caller went away.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return decideRun(cmd.Context(), f, opts, args[0], approve)
		},
	}
	if approve {
		cmd.Flags().StringVar(&opts.Reason, "note", "", "a note recorded with the decision")
	} else {
		cmd.Use, cmd.Short = "deny ID --reason TEXT", "Deny a held tool call: it does not run, and the model is told why"
		cmd.Long = `Deny ends the held call ID without running it; the model (or MCP client)
reads approval_denied with the reason. It fails when the call was already
decided, expired or its caller went away.`
		cmd.Flags().StringVar(&opts.Reason, "reason", "", "why (required; the model is told)")
		_ = cmd.MarkFlagRequired("reason")
	}
	cmd.Flags().StringVar(&opts.By, "by", "", "who decides, as recorded (default: your user name)")
	addPodFlags(cmd, &opts.PodOptions)
	return cmd
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %d argument(s), got %d", cmd.Name(), n, len(args))
		}
		return nil
	}
}

// adminAPI is what the approval verbs need of the admin client.
type adminAPI interface {
	Do(ctx context.Context, method, path string, body, out any) error
}

// adminFor is the admin API client of the running pod (tests replace it).
var adminFor = func(ctx context.Context, f *Factory, o *PodOptions) (adminAPI, error) {
	return podAdmin(ctx, f, o)
}

type approvalList struct {
	Approvals []approvals.Request `json:"approvals"`
}

func approvalsRun(ctx context.Context, f *Factory, opts *ApprovalsOptions) error {
	c, err := adminFor(ctx, f, &opts.PodOptions)
	if err != nil {
		return err
	}
	var last []byte
	for {
		var l approvalList
		if err := c.Do(ctx, "GET", "/api/approvals", nil, &l); err != nil {
			return err
		}
		doc, _ := json.Marshal(l)
		if !bytes.Equal(doc, last) {
			if last != nil && !opts.JSON {
				fmt.Fprintf(f.IO.Out, "\n-- %s\n", time.Now().Format("15:04:05"))
			}
			if err := writeApprovals(f.IO.Out, l, opts.JSON, time.Now()); err != nil {
				return err
			}
			last = doc
		}
		if !opts.Watch {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(opts.every):
		}
	}
}

// writeApprovals prints the list, every value from cllama escaped for
// the terminal (arguments come from a model).
func writeApprovals(w io.Writer, l approvalList, asJSON bool, now time.Time) error {
	if asJSON {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(l); err != nil {
			return err
		}
		_, err := w.Write(termsafe.JSONDocument(b.Bytes()))
		return err
	}
	if len(l.Approvals) == 0 {
		_, err := fmt.Fprintln(w, "no calls are waiting for a decision")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tTOOL\tWAITING\tEXPIRES IN\tARGUMENTS")
	for _, r := range l.Approvals {
		args := string(r.Arguments)
		if len(args) > 120 {
			args = args[:120] + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termsafe.String(r.ID), termsafe.String(r.Agent), termsafe.String(r.Tool),
			now.Sub(r.CreatedAt).Round(time.Second), r.ExpiresAt.Sub(now).Round(time.Second), termsafe.String(args))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range l.Approvals {
		fmt.Fprintf(w, "%s  sha256 %s  rule: %s\n", termsafe.String(r.ID), termsafe.String(r.ArgumentsSHA256), termsafe.String(r.Rule))
	}
	return nil
}

func decideRun(ctx context.Context, f *Factory, opts *DecideOptions, id string, approve bool) error {
	if !approvals.ValidID(id) {
		return usageErrorf("%q is not an approval id (32 hex digits, as `claw approvals` lists them)", termsafe.String(id))
	}
	if !approve && strings.TrimSpace(opts.Reason) == "" {
		return usageErrorf("deny needs --reason TEXT: the model is told why")
	}
	by := opts.By
	if by == "" {
		by = "operator"
		if u, err := user.Current(); err == nil && u.Username != "" {
			by = u.Username
		}
	}
	c, err := adminFor(ctx, f, &opts.PodOptions)
	if err != nil {
		return err
	}
	var cur approvals.Request
	if err := c.Do(ctx, "GET", "/api/approvals/"+id, nil, &cur); err != nil {
		return err
	}
	body := approvals.DecisionBody{Decision: "deny", Reason: opts.Reason, By: by, ArgumentsSHA256: cur.ArgumentsSHA256}
	if approve {
		body.Decision = "approve"
	}
	var out approvals.Request
	if err := c.Do(ctx, "POST", "/api/approvals/"+id, body, &out); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.Out, "%s %s: %s %s\n", termsafe.String(out.State), termsafe.String(out.ID), termsafe.String(out.Tool), termsafe.String(string(out.Arguments)))
	return nil
}
