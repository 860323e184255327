// Package sse owns cllama's Server-Sent Events handling: one Event type, one
// Parser (an iterator over the events of a stream), and one Writer that
// flushes every event or keepalive comment to the client as soon as it is
// written. The passthrough relay, the mediation loop's synthetic streams and
// its keepalives all go through this package, so framing rules live in one
// place. It knows nothing of OpenAI or Anthropic payloads.
//
// The framing follows the WHATWG HTML "Server-sent events" section: lines end
// in LF, CRLF or a lone CR; a line starting with ':' is a comment; an empty
// line ends an event; "data" lines are joined with LF.
package sse

// Event is one server-sent event.
type Event struct {
	// Name is the "event:" field. Empty means the default ("message").
	Name string
	// ID is the "id:" field, when present.
	ID string
	// Data is the "data:" lines joined with "\n", without a trailing newline.
	// Empty when the block had no data line (for example a comment-only
	// keepalive block).
	Data []byte
	// Raw is the block exactly as read from the stream, including the blank
	// line that ended it. Only the Parser sets it; the Writer ignores it.
	Raw []byte
}

// Clone returns a copy of e whose slices do not alias the Parser's buffers,
// for callers that keep an event past the next iteration.
func (e Event) Clone() Event {
	e.Data = append([]byte(nil), e.Data...)
	e.Raw = append([]byte(nil), e.Raw...)
	return e
}
