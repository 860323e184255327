package proxy

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/clawdapus/clawgo/internal/wire"
)

// conversationKey is the conversation a model request belongs to, for the
// budgets counted per conversation (docs/pod-file.md "Budgets"), scoped to
// the format and the agent:
//
//   - A request that continues a stored response (prev, Responses
//     previous_response_id, already checked to be the agent's) belongs to
//     that response's conversation, recorded beside its owner (prevConv);
//     one recorded without a conversation starts one named by its id.
//   - A request adding to a conversation the provider keeps (Responses
//     "conversation") belongs to it.
//   - Otherwise the runner resends the whole transcript with each
//     request, so a conversation's requests share their first visible
//     message (not a system message: feeds rewrite those), hashed in the
//     canonical form continuity uses. Conversations that start with the
//     same message (a templated prompt) share one count: the budget
//     counts more, never less.
func conversationKey(f wire.Format, agent string, body []byte, prev, prevConv string) string {
	switch {
	case prev != "" && prevConv != "":
		return prevConv
	case prev != "":
		return hashConversation(f.Name(), agent, "response", []byte(prev))
	}
	c, ok := f.(wire.Conversations)
	if !ok {
		// A format that cannot tell: all of the agent's requests in it
		// are one conversation.
		return hashConversation(f.Name(), agent, "format", nil)
	}
	if id := c.ProviderConversation(body); id != "" {
		return hashConversation(f.Name(), agent, "conversation", []byte(id))
	}
	// A transcript with no visible message hashes as empty: such
	// requests of the agent are one conversation.
	first, ok := wire.FirstMessage(c, body)
	if !ok {
		return hashConversation(f.Name(), agent, "first", nil)
	}
	return hashConversation(f.Name(), agent, "first", first[:])
}

// hashConversation is the hex SHA-256 of format, agent, kind and what
// names the conversation, each followed by a zero byte (none of them
// holds one but the last, which is last).
func hashConversation(format, agent, kind string, what []byte) string {
	h := sha256.New()
	for _, s := range []string{format, agent, kind} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(what)
	return hex.EncodeToString(h.Sum(nil))
}
