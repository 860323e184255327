//go:build race

package main

// raceFlags builds the binary under test with the race detector when the
// tests run with it.
var raceFlags = []string{"-race"}
