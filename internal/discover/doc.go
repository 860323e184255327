// Package discover snapshots the tools of stdio MCP services (spec 002,
// "Wrapping Stdio MCP Servers"; issue 6, `claw discover`).
//
// For one x-claw.mcp-stdio service it starts the claw-mcp-stdio wrapper —
// in a short-lived container from the service's image, or on the host —
// waits for its /healthz, performs MCP initialize and tools/list over
// Streamable HTTP with the official SDK client, and renders a claw.describe
// v2 descriptor with discovery metadata. Write puts it at
// .claw-discovered/<service>.claw-describe.json atomically.
//
// The package owns launching and always stopping the wrapper, the MCP
// listing, and the snapshot format. It does not decide how snapshots are
// used: internal/compile reads them as the compile-time source of truth.
package discover
