package broker

import (
	"fmt"
	"slices"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
)

// Sessions: bounded per agent (the least recently used closed first),
// and what each remembers for tool policy.

// touch records a request on an existing session (unknown ids are the
// SDK's to refuse and are not recorded).
func (as *agentServer) touch(sid string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if _, ok := as.lastUsed[sid]; ok {
		as.lastUsed[sid] = as.b.o.Now()
	}
}

func (as *agentServer) touchNew(sid string) {
	if sid == "" {
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.lastUsed[sid] = as.b.o.Now()
}

// makeRoom runs before a request that may open a session: at the bound,
// the least recently used session is closed (a runner that restarts
// without closing its sessions keeps working; the oldest goes). The
// caller holds as.opening until the request is served.
func (as *agentServer) makeRoom() {
	open := map[string]*mcp.ServerSession{}
	for ss := range as.server.Sessions() {
		open[ss.ID()] = ss
	}
	as.mu.Lock()
	for sid := range as.lastUsed {
		if open[sid] == nil {
			delete(as.lastUsed, sid)
			delete(as.called, sid)
		}
	}
	var victims []*mcp.ServerSession
	if excess := len(open) - as.b.o.MaxSessionsPerAgent + 1; excess > 0 {
		ids := make([]string, 0, len(open))
		for sid := range open {
			ids = append(ids, sid)
		}
		// Never-used (zero time) first, then the least recently used.
		sort.Slice(ids, func(i, j int) bool {
			ti, tj := as.lastUsed[ids[i]], as.lastUsed[ids[j]]
			if !ti.Equal(tj) {
				return ti.Before(tj)
			}
			return ids[i] < ids[j]
		})
		for _, sid := range ids[:excess] {
			victims = append(victims, open[sid])
			delete(as.lastUsed, sid)
			delete(as.called, sid)
		}
	}
	as.mu.Unlock()
	for _, ss := range victims {
		_ = ss.Close()
		as.b.rec.Emit(audit.Event{Type: audit.TypeError, ClawID: as.id, Format: history.FormatMCP,
			Error: fmt.Sprintf("MCP session closed: agent %s opened more than %d sessions (CLLAMA_MCP_MAX_SESSIONS); its least recently used one was closed", as.id, as.b.o.MaxSessionsPerAgent)})
	}
}

// maxCalledPerSession bounds what a session remembers for tool policy.
const maxCalledPerSession = 1024

// noteCalledLocked records that session sid called tool; as.mu is held.
func (as *agentServer) noteCalledLocked(sid, tool string) {
	if sid == "" {
		return
	}
	if _, open := as.lastUsed[sid]; !open {
		return // a session the broker does not track (closed)
	}
	if as.called == nil {
		as.called = map[string][]string{}
	}
	if c := as.called[sid]; len(c) < maxCalledPerSession && !slices.Contains(c, tool) {
		as.called[sid] = append(c, tool)
	}
}
