package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/console"
	"github.com/clawdapus/clawgo/internal/histindex"
	"github.com/clawdapus/clawgo/internal/proxy"
)

// consoleIndexPath is where the console's history index lives: beside
// cllama's other state, one file per replica (replicas share the history
// directory, not their index).
func consoleIndexPath(cfg proxy.Config, replica string) string {
	name := "index.db"
	if replica != "" {
		name = "index." + replica + ".db"
	}
	return filepath.Join(cfg.ContinuityDir(), "console", name)
}

// consoleMount is what the console needs of the admin listener.
type consoleMount interface {
	console.Mux
	SetAuthenticator(func(*http.Request) bool)
}

// startConsole mounts the operator's console on the admin listener: its
// pages, the history index following the history files, and the live
// counters listening to the recorder. verify checks the operator token;
// bearer reports a request carrying it. The returned func stops it.
func startConsole(ctx context.Context, cfg proxy.Config, st *stages, srv *proxy.Server, m consoleMount,
	verify func(string) bool, bearer func(*http.Request) bool, stderr io.Writer) (func(), error) {
	var idx *histindex.Index
	if cfg.HistoryDir != "" {
		var err error
		idx, err = histindex.Open(histindex.Options{HistoryDir: cfg.HistoryDir, Path: consoleIndexPath(cfg, cfg.HistoryReplica())})
		if err != nil {
			return nil, fmt.Errorf("console: %w (set CLLAMA_STATE_DIR to a writable directory)", err)
		}
	}
	opts := console.Options{Pod: cfg.Pod, Index: idx, Agents: console.ContextAgents(cfg.ContextRoot, srv.Agents()),
		VerifyToken: verify, Bearer: bearer, OnLogin: func(a console.LoginAttempt) {
			st.rec.Emit(audit.Event{Type: audit.TypeConsoleLogin, Login: &audit.Login{Client: a.Client, Outcome: a.Outcome,
				Failures: a.Failures, RetryAfterMS: a.RetryAfter.Milliseconds(), PodWide: a.Global}})
		}}
	if st.approvals != nil {
		opts.Approvals = consoleApprovals{st.approvals}
	}
	opts.Budgets = consoleBudgets{srv}
	c, err := console.New(opts)
	if err != nil {
		_ = idx.Close()
		return nil, err
	}
	st.rec.Add(c.Live())
	c.Mount(m)
	m.SetAuthenticator(c.Authenticated)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	if idx == nil {
		fmt.Fprintln(stderr, "cllama: console without history (CLAW_SESSION_HISTORY_DIR is off): live counters only")
	}
	return func() {
		cancel()
		<-done
		_ = idx.Close()
	}, nil
}

// consoleApprovals is the approvals queue as the console shows it: the
// pending calls, and a decision on one by its id (an id names one call
// with its exact arguments).
type consoleApprovals struct{ m *approvals.Manager }

func (a consoleApprovals) Pending(ctx context.Context) ([]console.Approval, error) {
	rs, err := a.m.Store().Pending(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]console.Approval, 0, min(len(rs), approvals.MaxListed))
	for _, r := range rs[:min(len(rs), approvals.MaxListed)] {
		out = append(out, console.Approval{ID: r.ID, Agent: r.Agent, Tool: r.Tool, Arguments: r.Arguments, Requested: r.CreatedAt, Expires: r.ExpiresAt})
	}
	return out, nil
}

func (a consoleApprovals) Decide(ctx context.Context, id string, approve bool, by string) error {
	d := approvals.Decision{State: approvals.Denied, By: by, Reason: "denied in the console"}
	if approve {
		d.State, d.Reason = approvals.Approved, ""
	}
	_, err := a.m.Decide(ctx, id, d)
	return err
}

// consoleBudgets are an agent's budgets and the pod's, in dollars,
// requests and tokens, each with what its current window has spent and
// when it resets, as the console shows them.
type consoleBudgets struct{ srv *proxy.Server }

func (b consoleBudgets) AgentBudgets(agent string) []console.Budget {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := b.srv.BudgetStatus(ctx, agent)
	if err != nil {
		return nil
	}
	out := make([]console.Budget, 0, len(st))
	for _, s := range st {
		out = append(out, console.Budget{Scope: s.Scope, Unit: s.Unit, Period: s.Per, Limit: s.Limit, Spent: s.Spent, ResetsAt: s.ResetsAt})
	}
	return out
}
