package toolexec

import (
	"encoding/json"
	"strconv"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// envelopeOverhead is what a truncated envelope adds around its data:
// {"ok":true,"data":,"truncated":true,"original_bytes":NNNNNNNNNNNN}.
// Data is cut to the bound minus this, so the whole envelope, marshalled,
// stays within max_tool_result_bytes. A size that is only a lower bound
// is named original_bytes_at_least, atLeastOverhead bytes longer.
const (
	envelopeOverhead = len(`{"ok":true,"data":,"truncated":true,"original_bytes":}`) + 12
	atLeastOverhead  = len(`_at_least`)
)

// minDataBudget keeps a useful prefix even under absurdly small bounds.
const minDataBudget = 32

// result is a service's answer before it is bounded: either JSON (data is
// canonical JSON) or text (the raw text, sent as a JSON string).
type result struct {
	json []byte
	text string
	// isText selects text over json.
	isText bool
	// cut reports that the service's answer was longer than what was read;
	// fullSize is then its size: exact, or a lower bound when sizeAtLeast
	// (the rest was not all counted).
	cut         bool
	fullSize    int
	sizeAtLeast bool
}

// Cut is a success envelope of data (valid JSON) within maxBytes: data as
// it is when its serialized envelope fits, else bound's cut with
// truncated and original_bytes. It is how a result that reached the
// caller over the cap is cut (internal/toolcall), the same rule as a
// result cut here.
func Cut(data json.RawMessage, maxBytes int) Envelope {
	return bound(result{json: data}, maxBytes)
}

// bound turns a result into a success envelope. Data whose serialized size
// exceeds maxBytes becomes a JSON string holding the first bytes of the
// text (or of the JSON's serialization), cut on a rune boundary so that the
// whole truncated envelope, marshalled, stays within maxBytes; truncated is
// set and original_bytes is the true size (spec 000 "Budgets"), or, when
// the size was not all counted, original_bytes_at_least a lower bound.
func bound(r result, maxBytes int) Envelope {
	size := len(r.json)
	if r.isText {
		size = jsontop.StringLen(r.text)
	}
	atLeast := false
	if r.cut && r.fullSize > size {
		size, atLeast = r.fullSize, r.sizeAtLeast
	}
	if !r.cut && (maxBytes <= 0 || size <= maxBytes) {
		if r.isText {
			return Envelope{OK: true, Data: jsontop.AppendString(nil, r.text)}
		}
		return Envelope{OK: true, Data: r.json}
	}
	budget := maxBytes - envelopeOverhead - (len(strconv.Itoa(size)) - 12)
	if atLeast {
		budget -= atLeastOverhead
	}
	if budget < minDataBudget {
		budget = minDataBudget
	}
	// Every source byte costs at least one output byte, so no more than
	// budget bytes of the source can be needed.
	src := r.text
	if !r.isText {
		src = string(r.json[:min(len(r.json), budget)])
	}
	data, _ := jsontop.AppendStringWithin(make([]byte, 0, budget), src, budget)
	if atLeast {
		return Envelope{OK: true, Data: data, Truncated: true, OriginalBytesAtLeast: size}
	}
	return Envelope{OK: true, Data: data, Truncated: true, OriginalBytes: size}
}
