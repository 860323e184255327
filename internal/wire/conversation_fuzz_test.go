package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/formats"
)

// FuzzFirstMessage: whatever transcript a runner sends, finding its first
// message never panics, gives the same digest every time, and ignores the
// system messages before it (feeds rewrite those every turn, so they must
// not start a new conversation), in every format that tells
// conversations apart.
func FuzzFirstMessage(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","content":"hi"}]`,
		`[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}]`,
		`[{"role":"developer","content":"d"},{"role":"assistant","content":"a"}]`,
		`[{"type":"message","role":"user","content":"hi"},{"type":"reasoning","summary":[]}]`,
		`[]`, `"hello"`, `[1,"x",null]`,
	} {
		f.Add([]byte(s))
	}
	var convs []wire.Conversations
	for _, wf := range formats.All() {
		if c, ok := wf.(wire.Conversations); ok {
			convs = append(convs, c)
		}
	}
	if len(convs) == 0 {
		f.Fatal("no format tells conversations apart")
	}
	f.Fuzz(func(t *testing.T, transcript []byte) {
		if !json.Valid(transcript) {
			return
		}
		for _, c := range convs {
			body := []byte(`{"model":"m","` + c.TranscriptMember() + `":` + string(transcript) + `}`)
			d1, ok1 := wire.FirstMessage(c, body)
			d2, ok2 := wire.FirstMessage(c, body)
			if d1 != d2 || ok1 != ok2 {
				t.Fatalf("%s: two reads of one body differ", c.Name())
			}
			if len(transcript) == 0 || transcript[0] != '[' {
				continue
			}
			// A system message put first does not change the conversation.
			withSystem := []byte(`{"model":"m","` + c.TranscriptMember() + `":[{"role":"system","content":"feed text"}` + sep(transcript) + string(transcript[1:]) + `}`)
			d3, ok3 := wire.FirstMessage(c, withSystem)
			if ok3 != ok1 || d3 != d1 {
				t.Fatalf("%s: a system message before %s changed the conversation", c.Name(), transcript)
			}
		}
	})
}

// sep is what goes between a prepended element and the rest of the array
// arr: a comma unless arr is empty.
func sep(arr []byte) string {
	for _, b := range arr[1:] {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		case ']':
			return ""
		}
		return ","
	}
	return ""
}
