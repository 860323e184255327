// Package feeds owns cllama's context feeds (spec 003, ADR-013): live data
// from pod services, fetched per agent and injected into every model request
// of that agent as clearly delimited blocks.
//
// It owns the fetch (caller-identity headers, bearer, per-fetch timeout,
// bounded body read), the per-agent, per-URL TTL cache (bounded, LRU), the
// sharing of one in-flight fetch between concurrent requests, the optional
// frontmatter of a feed body, the per-feed and per-request size caps, the
// rendering of feed blocks, and handing them to the request's format to
// splice into its body (wire.FeedInjector, implemented in wire/<format>;
// a format that cannot carry feeds fails the request rather than dropping
// them silently). It does not load feeds.json or service-auth
// (internal/agentctx does), forward requests (internal/proxy), or run tool
// loops (internal/mediate): the mediator receives a body that is already
// decorated, so mediated and passthrough requests see the same feeds.
//
// # Where the feed context goes
//
// Spec 003 §4 asks cllama to "prepend the responses as clearly delimited
// context blocks" in the system context. The runner's own system prompt is
// never rewritten; the feed context is added beside it (each format decides
// where; today's formats do this):
//
//   - OpenAI chat: one new message holding every feed block is inserted right
//     after the runner's leading run of system/developer messages (or first,
//     when there is none). It takes the role of the last of those messages
//     ("system" when there is none), so a runner that speaks only
//     "developer" to a reasoning model is not handed a second role. After,
//     not before: the runner's system prompt stays the first thing the model
//     reads, and the bytes up to the end of it stay identical from request
//     to request, so providers' prefix caches keep hitting while feed
//     content changes. It still comes before the whole conversation.
//   - Anthropic messages: `system` absent, null or blank becomes the feed
//     text as a string. A non-blank string becomes a block array: the
//     runner's text as the first block, byte for byte, then one text block
//     with the feeds. A block array gets one text block appended after the
//     runner's blocks. Appending keeps every runner cache_control breakpoint
//     and the cached prefix it ends; the feed block carries no
//     cache_control of its own (a request may carry at most four).
//
// Only the top-level JSON around the insertion point is scanned; every other
// byte of the body, including fields cllama does not know, is kept as sent.
// A body that is not a JSON object of the expected shape is left unchanged
// for the provider to reject.
//
// # Blocks
//
// The injected text is Preface, then one block per feed in manifest order,
// separated by blank lines:
//
//	--- BEGIN FEED: fleet-alerts (from claw-api, refreshed 2026-03-19T14:32:00Z) ---
//	Fleet nominal. 7 agents healthy. No alerts.
//	--- END FEED: fleet-alerts ---
//
// refreshed is the frontmatter's refreshed time when given, else when cllama
// fetched the body. A JSON body (by media type, or a text body that parses
// as an object or array) is shown in a ```json fence, a longer fence when
// the JSON holds backticks. A content line that looks like a BEGIN/END FEED
// line is indented by one space, so a service cannot forge frames. Every
// note the model should see (stale warning, truncation, omission, the
// unavailable placeholder) is a bracketed line inside the block.
//
// FeedCap bounds each feed's content; TotalCap bounds the whole text. When
// the total would be exceeded, earlier feeds keep their content first, a
// feed that no longer fits whole is cut, and the feeds after it show only
// "[content omitted: ...]"; every feed keeps its frame.
//
// # Failure never fails the request
//
// A feed that cannot be fetched (transport error, timeout, non-2xx status)
// is shown from its last good content with an age warning inside its block,
// or, with nothing cached, as an "unavailable" placeholder block. After a
// failure the feed is not fetched again for min(FailureBackoff, TTL), so a
// dead service does not cost every request a full timeout. A malformed
// feeds.json (Agent.FeedsErr) yields one placeholder block, so the model
// knows its feed context is missing, and one manifest_error audit event per
// loaded snapshot of the agent.
package feeds
