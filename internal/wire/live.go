package wire

import "encoding/json"

// LiveStreaming is a format whose mediated turns stream to the runner as
// the provider writes them (optional ability; internal/mediate): every
// round is asked of the provider as a stream, each round's text goes to
// the runner as it arrives, and the rounds make one response lifecycle of
// the format. A format without it is answered with a replay of the final
// response (ToolLoop.StreamEvents) after the turn.
type LiveStreaming interface {
	ToolLoop
	// PrepareStreamingUpstream makes the request stream upstream, asking
	// for usage where the format asks for it (OpenAI chat
	// stream_options.include_usage): cllama counts every round.
	PrepareStreamingUpstream(r *Request)
	// NewLive returns the runner-side encoder of one turn's stream.
	// includeUsage is whether the runner asked for usage (formats that
	// always report usage ignore it).
	NewLive(includeUsage bool) Live
	// ReplacedTail is what the provider saw of the final response that
	// stands in the place of the first item of the answer the runner
	// received, after the hidden rounds: continuity puts the hidden rounds
	// and this tail where the runner sends back that item. A format whose
	// answer is one message returns the whole assistant turn; a format
	// whose answer is several items returns the items before and around
	// its text, leaving out the calls the runner keeps as items of their
	// own.
	ReplacedTail(resp *Response) ([]json.RawMessage, error)
}

// Live turns the upstream streams of one mediated turn's rounds into one
// runner stream. It is not safe for concurrent use.
type Live interface {
	// Observe takes one event of the current round's upstream stream (data
	// non-empty, not an error event) and returns the events to send the
	// runner now: the lifecycle's opening (first round), and text as it
	// comes. Tool-call deltas are never returned: whether a call is the
	// runner's is known only once its round has ended.
	Observe(name string, data []byte) ([]Event, error)
	// EndRound is called when a round's upstream stream has ended, before
	// the next round starts or the turn finishes; it returns the events
	// closing what the round opened, if any.
	EndRound() ([]Event, error)
	// Finish returns the events that end the lifecycle after the final
	// round: the runner's own calls of resp (the final response, parsed),
	// the stop reason and usage (total, summed over the rounds).
	Finish(resp *Response, total Usage) ([]Event, error)
}

// LiveErrorer is a Live whose in-band error event depends on the stream
// so far (Responses: its sequence_number continues the lifecycle's);
// others use Format.ErrorEvent.
type LiveErrorer interface {
	ErrorEvent(errType, msg string) Event
}

// LiveContinuing is a LiveStreaming format whose requests continue from a
// stored response by its id (Responses previous_response_id). A live
// lifecycle's id is that of the round whose text was shown first, which
// may be a hidden round's: cllama then maps it to the final round's, the
// one whose stored chain holds the whole turn.
type LiveContinuing interface {
	// ContinuesFrom is the id r continues from ("" when none).
	ContinuesFrom(r *Request) string
	// ContinueFrom makes r continue from id instead.
	ContinueFrom(r *Request, id string)
}
