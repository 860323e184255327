package mediate

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/resultstore"
	"github.com/clawdapus/clawgo/internal/toolcall"
)

// Kept results (issue 37; internal/toolcall, internal/resultstore): a
// managed result over the cap is kept whole behind a handle, and the
// model reads it with the built-in claw.read_result, offered only in a
// conversation that holds a handle.
//
// In the model loop a conversation has no id of its own: it is the
// chain of visible messages continuity follows (continuity.go). So a
// conversation holds the handles that appear in the hidden rounds
// continuity restored into this request (results cllama itself answered
// in the conversation's earlier turns, never anything the runner wrote)
// and those this turn's calls produced. A read of any other handle is
// unknown_handle before the store is asked: another conversation's
// handles, and another agent's (the store checks the agent too).

// mediatedConversation is the store's conversation of every mediated
// handle; which conversation holds one is decided by held.
const mediatedConversation = "mediated"

// results is the turn's Call.Results, or nil when nothing is kept.
func (t *turn) results() *toolcall.Results {
	if t.m.opt.Results == nil {
		return nil
	}
	held := t.held
	return &toolcall.Results{Store: t.m.opt.Results, Scope: resultstore.Scope{Agent: t.x.Agent.ID, Conversation: mediatedConversation},
		Held: func(h string) bool { return held[h] }}
}

// holdRestored collects the handles of the restored hidden rounds and,
// when there are any, offers claw.read_result.
func (t *turn) holdRestored(restored []json.RawMessage) *failure {
	if t.m.opt.Results == nil || len(restored) == 0 {
		return nil
	}
	held := map[string]bool{}
	for _, m := range restored {
		resultstore.FindHandles(m, held)
	}
	return t.hold(held)
}

// holdKept adds the handles a batch's calls produced; it runs after the
// batch, so held never changes while calls read it.
func (t *turn) holdKept(batch []pending) *failure {
	var held map[string]bool
	for i := range batch {
		if h := batch[i].env.ResultHandle; h != "" {
			if held == nil {
				held = map[string]bool{}
			}
			held[h] = true
		}
	}
	return t.hold(held)
}

// hold adds handles to the conversation's, offering claw.read_result to
// the model from the next upstream call on.
func (t *turn) hold(handles map[string]bool) *failure {
	if len(handles) == 0 {
		return nil
	}
	if t.held == nil {
		t.held = make(map[string]bool, len(handles))
	}
	for h := range handles {
		t.held[h] = true
	}
	added, err := t.pres.offerRead(t.f)
	if err != nil {
		return internalFailure("presenting %s: %v", toolcall.ReadResult.Name, err)
	}
	if added {
		t.req.Tools = append(t.req.Tools, t.pres.read)
	}
	return nil
}
