package modelsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sync/atomic"
)

// answer is a rule's reply made concrete for one request: tool names
// resolved to the offered names, ids assigned, usage filled in.
type answer struct {
	ID    string
	Model string
	Text  string
	Calls []call
	Usage Usage
}

type call struct {
	ID   string
	Name string
	Args json.RawMessage
}

// ids hands out increasing numbers so ids are unique within a process and
// stable across runs of the same conversation.
type ids struct{ n atomic.Int64 }

func (i *ids) next(prefix string) string {
	return fmt.Sprintf("%s%06d", prefix, i.n.Add(1))
}

func (s *Server) makeAnswer(c *Conversation, r *Rule) answer {
	msgPrefix, callPrefix := "chatcmpl-sim", "call_sim"
	switch c.Format {
	case FormatAnthropic:
		msgPrefix, callPrefix = "msg_sim", "toolu_sim"
	case FormatResponses:
		msgPrefix = "resp_sim"
	}
	a := answer{ID: s.ids.next(msgPrefix), Model: c.Model, Text: r.Reply.Text}
	out := len(a.Text)
	for _, tc := range r.Reply.ToolCalls {
		a.Calls = append(a.Calls, call{ID: s.ids.next(callPrefix), Name: resolveTool(tc.Name, c.Tools), Args: withResultHandle(tc.args, c.ToolResults)})
		out += len(tc.Name) + len(tc.args)
	}
	if r.Reply.Usage != nil {
		a.Usage = *r.Reply.Usage
	} else {
		// About four characters a token: close enough for budgets and
		// usage plumbing, and deterministic.
		a.Usage = Usage{InputTokens: max(1, (c.inputChars()+3)/4), OutputTokens: max(1, (out+3)/4)}
	}
	return a
}

// resultHandlePlaceholder, as an argument's whole string value, stands
// for the result_handle of a cut tool result in the last message (cllama
// keeps such a result whole; claw.read_result reads it by handle).
const resultHandlePlaceholder = `"$result_handle"`

var resultHandle = regexp.MustCompile(`"result_handle":"([A-Za-z0-9_]{1,128})"`)

// withResultHandle is args with resultHandlePlaceholder replaced by the
// last result_handle the tool results hold (left as it is without one).
func withResultHandle(args json.RawMessage, results []ToolResult) json.RawMessage {
	if !bytes.Contains(args, []byte(resultHandlePlaceholder)) {
		return args
	}
	for i := len(results) - 1; i >= 0; i-- {
		if m := resultHandle.FindStringSubmatch(results[i].Content); m != nil {
			return bytes.ReplaceAll(args, []byte(resultHandlePlaceholder), []byte(`"`+m[1]+`"`))
		}
	}
	return args
}
