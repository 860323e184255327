package console

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/clawdapus/clawgo/internal/histindex"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// recentTurns is how many turns an agent's page lists.
const recentTurns = 50

func (c *Console) view(s *session, title, nav string, data any) *view {
	return &view{Title: title, Pod: c.opts.Pod, Nav: nav, CSRF: s.csrf, Authed: true, Now: c.opts.Now().UTC(), Data: data}
}

// startOfDay is midnight UTC of t's day: "today" for spend.
func startOfDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

type homeRow struct {
	AgentInfo
	Live     AgentLive
	Last     time.Time
	Spend    histindex.Spend
	Budgets  []Budget
	Unlisted bool // has history or traffic but no compiled context now
}

type homeData struct {
	Agents     []homeRow
	HistoryOff bool
	BudgetsOff bool
}

func (c *Console) home(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	now := c.opts.Now()
	live, _, _ := c.live.Snapshot()
	ids := map[string]bool{}
	for _, id := range c.opts.Agents.IDs() {
		ids[id] = true
	}
	var spend map[string]histindex.Spend
	if x := c.opts.Index; x != nil {
		hist, err := x.Agents(ctx)
		if err != nil {
			c.fail(w, s, http.StatusInternalServerError, err.Error())
			return
		}
		for _, id := range hist {
			if _, ok := ids[id]; !ok {
				ids[id] = false
			}
		}
		if spend, err = x.SpendSince(ctx, startOfDay(now)); err != nil {
			c.fail(w, s, http.StatusInternalServerError, err.Error())
			return
		}
	}
	for id := range live {
		if _, ok := ids[id]; !ok && manifest.ValidAgentID(id) && len(ids) < maxAgents {
			ids[id] = false
		}
	}
	d := homeData{HistoryOff: c.opts.Index == nil, BudgetsOff: c.opts.Budgets == nil}
	for id, listed := range ids {
		row := homeRow{AgentInfo: AgentInfo{ID: id}, Live: live[id], Spend: spend[id], Unlisted: !listed}
		if info, ok := c.opts.Agents.Agent(id); ok {
			row.AgentInfo = info
		}
		row.Last = row.Live.Last
		if x := c.opts.Index; x != nil {
			if t, err := x.LastActivity(ctx, id); err == nil && t.After(row.Last) {
				row.Last = t
			}
		}
		if c.opts.Budgets != nil {
			row.Budgets = c.opts.Budgets.AgentBudgets(id)
		}
		d.Agents = append(d.Agents, row)
	}
	sort.Slice(d.Agents, func(i, j int) bool { return d.Agents[i].ID < d.Agents[j].ID })
	c.render(w, http.StatusOK, "home", c.view(s, "Pod", "home", d))
}

type agentData struct {
	Info       AgentInfo
	Known      bool
	Live       AgentLive
	Turns      []histindex.Turn
	Budgets    []Budget
	BudgetsOff bool
	HistoryOff bool
}

func (c *Console) agent(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	if !manifest.ValidAgentID(id) {
		c.fail(w, s, http.StatusNotFound, "no such agent")
		return
	}
	info, known := c.opts.Agents.Agent(id)
	live, _, _ := c.live.Snapshot()
	d := agentData{Info: info, Known: known, Live: live[id], HistoryOff: c.opts.Index == nil, BudgetsOff: c.opts.Budgets == nil}
	d.Info.ID = id
	if x := c.opts.Index; x != nil {
		var err error
		if d.Turns, err = x.Recent(r.Context(), id, recentTurns); err != nil {
			c.fail(w, s, http.StatusInternalServerError, err.Error())
			return
		}
	}
	if !known && len(d.Turns) == 0 && d.Live == (AgentLive{}) {
		c.fail(w, s, http.StatusNotFound, "no such agent")
		return
	}
	if c.opts.Budgets != nil {
		d.Budgets = c.opts.Budgets.AgentBudgets(id)
	}
	c.render(w, http.StatusOK, "agent", c.view(s, "Agent "+id, "home", d))
}

type turnData struct {
	Entry    *history.Entry
	Turn     histindex.Turn
	Timeline timeline
}

func (c *Console) turn(w http.ResponseWriter, r *http.Request, s *session) {
	x := c.opts.Index
	if x == nil {
		c.fail(w, s, http.StatusNotFound, "session history is off (CLAW_SESSION_HISTORY_DIR): no turns are kept")
		return
	}
	id := r.PathValue("id")
	if len(id) > 128 {
		c.fail(w, s, http.StatusNotFound, "no such turn")
		return
	}
	e, t, err := x.Entry(r.Context(), id)
	if errors.Is(err, histindex.ErrNotFound) {
		// Written a moment ago, not read yet: read the new lines once.
		if _, serr := x.Sync(r.Context()); serr == nil {
			e, t, err = x.Entry(r.Context(), id)
		}
	}
	if errors.Is(err, histindex.ErrNotFound) {
		c.fail(w, s, http.StatusNotFound, "no such turn")
		return
	}
	if err != nil {
		c.fail(w, s, http.StatusInternalServerError, err.Error())
		return
	}
	d := turnData{Entry: e, Turn: t, Timeline: buildTimeline(e)}
	c.render(w, http.StatusOK, "turn", c.view(s, "Turn "+id, "home", d))
}

// toolsWindow is what the tools page summarises.
const toolsWindow = time.Hour

type toolsData struct {
	Window     time.Duration
	Tools      []toolRow
	HistoryOff bool
}

type toolRow struct {
	histindex.ToolStat
	PerMin string
}

func (c *Console) tools(w http.ResponseWriter, r *http.Request, s *session) {
	d := toolsData{Window: toolsWindow, HistoryOff: c.opts.Index == nil}
	if x := c.opts.Index; x != nil {
		ts, err := x.Tools(r.Context(), c.opts.Now().Add(-toolsWindow))
		if err != nil {
			c.fail(w, s, http.StatusInternalServerError, err.Error())
			return
		}
		for _, t := range ts {
			d.Tools = append(d.Tools, toolRow{ToolStat: t, PerMin: perMin(t.Calls, toolsWindow)})
		}
	}
	c.render(w, http.StatusOK, "tools", c.view(s, "Tools", "tools", d))
}

func perMin(n int, window time.Duration) string {
	v := float64(n) / window.Minutes()
	switch {
	case v == 0:
		return "0"
	case v < 0.1:
		return "<0.1"
	}
	return trimFloat(v)
}

func trimFloat(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64)
}

type approvalsData struct {
	Configured bool
	Pending    []Approval
	Error      string
}

func (c *Console) approvals(w http.ResponseWriter, r *http.Request, s *session) {
	d := approvalsData{Configured: c.opts.Approvals != nil}
	if c.opts.Approvals != nil {
		p, err := c.opts.Approvals.Pending(r.Context())
		if err != nil {
			d.Error = err.Error()
		}
		d.Pending = p
	}
	c.render(w, http.StatusOK, "approvals", c.view(s, "Approvals", "approvals", d))
}

func (c *Console) decide(w http.ResponseWriter, r *http.Request, s *session) {
	if c.opts.Approvals == nil {
		c.fail(w, s, http.StatusNotFound, "approvals are not configured")
		return
	}
	var approve bool
	switch r.PostForm.Get("decision") {
	case "approve":
		approve = true
	case "deny":
	default:
		c.fail(w, s, http.StatusBadRequest, `decision must be "approve" or "deny"`)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := c.opts.Approvals.Decide(ctx, r.PathValue("id"), approve, "console:"+s.id); err != nil {
		c.fail(w, s, http.StatusConflict, err.Error())
		return
	}
	http.Redirect(w, r, "/approvals", http.StatusSeeOther)
}

type feedRow struct {
	Agent string
	FeedInfo
	State   FeedState
	Fetched bool
	Stale   bool
	Age     time.Duration
}

func (c *Console) feeds(w http.ResponseWriter, r *http.Request, s *session) {
	now := c.opts.Now()
	states := map[feedKey]FeedState{}
	for _, f := range c.live.Feeds() {
		states[feedKey{f.Agent, f.Feed}] = f
	}
	var rows []feedRow
	for _, id := range c.opts.Agents.IDs() {
		info, ok := c.opts.Agents.Agent(id)
		if !ok {
			continue
		}
		for _, f := range info.Feeds {
			row := feedRow{Agent: id, FeedInfo: f}
			row.State, row.Fetched = states[feedKey{id, f.Name}]
			delete(states, feedKey{id, f.Name})
			row.fill(now)
			rows = append(rows, row)
		}
	}
	for k, st := range states { // fetched, but no longer compiled
		row := feedRow{Agent: k.agent, FeedInfo: FeedInfo{Name: k.feed}, State: st, Fetched: true}
		row.fill(now)
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Agent != rows[j].Agent {
			return rows[i].Agent < rows[j].Agent
		}
		return rows[i].Name < rows[j].Name
	})
	c.render(w, http.StatusOK, "feeds", c.view(s, "Feeds", "feeds", rows))
}

func (f *feedRow) fill(now time.Time) {
	if !f.Fetched || f.State.LastOK.IsZero() {
		f.Stale = f.Fetched
		return
	}
	f.Age = now.Sub(f.State.LastOK).Truncate(time.Second)
	f.Stale = f.TTL > 0 && f.Age > time.Duration(f.TTL)*time.Second || f.State.Stale
}
