package responses

import (
	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

var _ wire.Conversations = Format{}

// TranscriptMember implements wire.Conversations.
func (Format) TranscriptMember() string { return inputKey }

// ProviderConversation implements wire.Conversations: "conversation", its
// id as a string or as an object's "id".
func (Format) ProviderConversation(body []byte) string {
	raw, _ := jsontop.Find(body, "conversation")
	if len(raw) > 0 && raw[0] == '{' {
		raw, _ = jsontop.Find(raw, "id")
	}
	id, _ := wire.String(raw)
	return id
}
