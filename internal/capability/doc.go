// Package capability owns the canonical capability IR of a pod service —
// tools, feeds, skill, endpoints, auth and MCP endpoint (spec 000 §1) — and
// the ways into it: `claw.describe` descriptors (versions 1 and 2) and MCP
// `tools/list` snapshots (`.claw-tools.json`).
//
// Every decoder validates fully and returns errors that name the field path
// (for example `tools[1].http.path`) so callers can prefix the file. The
// package does no I/O and knows nothing about pods, grants or the compiled
// manifests; internal/compile projects the IR into internal/manifest types.
package capability
