// Package faulttest holds the fault injection that tests of durable files
// share (session history, the continuity store): a small filesystem to fill
// and a process killed with SIGKILL again and again while it writes. It is
// imported by tests only.
package faulttest
