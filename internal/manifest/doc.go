// Package manifest owns the compiled contract between claw (which writes it)
// and cllama (which reads it): metadata.json, tools.json, feeds.json,
// service-auth/<service>.json and providers.json.
//
// One set of types serves both sides. Every Parse function validates fully and
// returns an error that names the file's field path (for example
// `tools[2].execution.transport`) and says how to fix it, so a malformed
// manifest never silently disables governance. The package does no I/O beyond
// the Read*/Write helpers and reads no environment.
package manifest
