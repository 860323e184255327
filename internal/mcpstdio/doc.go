// Package mcpstdio wraps a stdio MCP server as a Streamable HTTP MCP endpoint
// (spec 002, "Wrapping Stdio MCP Servers").
//
// It owns: running the child command, one MCP client session to it over
// stdin/stdout, restarting it with capped exponential backoff, mirroring its
// tools (and resources and prompts) into an MCP server that serves many HTTP
// sessions, forwarding calls with timeouts, health, auth and body limits, and
// shutting everything down politely.
//
// It does not own discovery snapshots (cmd/claw discover) or deciding which
// tools an agent may call (cllama does): every HTTP client sees every tool the
// child offers, so the endpoint must stay pod-internal or require a token.
package mcpstdio
