package anthropic

import "github.com/clawdapus/clawgo/internal/wire"

var _ wire.Conversations = Format{}

// TranscriptMember implements wire.Conversations.
func (Format) TranscriptMember() string { return "messages" }

// ProviderConversation implements wire.Conversations: messages keep no
// conversation.
func (Format) ProviderConversation([]byte) string { return "" }
