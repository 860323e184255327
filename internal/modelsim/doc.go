// Package modelsim is a scripted model provider: it speaks the OpenAI chat
// completions, OpenAI Responses and Anthropic messages APIs (streaming and
// not; Responses with kept responses, previous_response_id, reasoning items
// and GET/DELETE /v1/responses/{id} and its input_items) and answers from a
// script of rules instead of a model. It serves offline demos, users'
// own pod tests, and this project's end-to-end tests, which can also read
// back every request it received (what tools were offered, whether feeds
// reached the system prompt).
//
// It owns the script format, matching a request against it, and writing
// responses that the official SDKs parse. It does not proxy, mediate or
// execute tools: a tool call in a reply is only ever text on the wire.
package modelsim
