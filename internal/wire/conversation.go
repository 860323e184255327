package wire

import (
	"crypto/sha256"
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// Conversations is a format whose requests tell which conversation they
// belong to (optional ability), for per-conversation budgets: stateless
// runners resend the whole transcript with every request, so a
// conversation's requests share their first visible message; a provider
// may also keep the conversation itself, named in the request.
type Conversations interface {
	ToolLoop
	// TranscriptMember is the request member that holds the
	// conversation's messages ("messages"; Responses: "input", where a
	// string is one user message).
	TranscriptMember() string
	// ProviderConversation is the id of the conversation the provider
	// keeps that the request adds to ("" when none; Responses:
	// "conversation", a string or an object with an id).
	ProviderConversation(body []byte) string
}

// FirstMessage is the SHA-256 of the canonical form (ToolLoop.Canonical,
// as continuity hashes it) of the first message of body's transcript that
// is neither a system message (feeds rewrite those) nor a prelude item. A
// message that does not canonicalise is hashed as it is. ok is false when
// the transcript has no such message. body was validated (the edge).
func FirstMessage(f Conversations, body []byte) (digest [sha256.Size]byte, ok bool) {
	raw, found := jsontop.Find(body, f.TranscriptMember())
	if !found || len(raw) == 0 {
		return digest, false
	}
	if raw[0] == '"' {
		s, _ := String(raw)
		msg, err := json.Marshal(struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{"user", s})
		if err != nil {
			return digest, false
		}
		return canonDigest(f, msg)
	}
	for start, end := range jsontop.Elements(raw, 0) {
		msg := raw[start:end]
		if role, ok := jsontop.Find(msg, "role"); ok && (string(role) == `"system"` || string(role) == `"developer"`) {
			// Skipped on its role alone: a long system prompt (feeds)
			// is not decoded.
			continue
		}
		if d, ok := canonDigest(f, msg); ok {
			return d, true
		}
	}
	return digest, false
}

// canonDigest hashes msg's canonical form; ok is false for a system
// message or a prelude item.
func canonDigest(f ToolLoop, msg []byte) ([sha256.Size]byte, bool) {
	c, err := f.Canonical(msg)
	if err != nil {
		return sha256.Sum256(msg), true
	}
	if c.Role == RoleSystem || c.Role == RolePrelude {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(c.Bytes), true
}
