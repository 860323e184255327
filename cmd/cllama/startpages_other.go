//go:build !linux

package main

import "github.com/clawdapus/clawgo/internal/proxy"

// releaseStartPages returns the heap that start-up left as garbage. (On
// Linux it also gives back the executable's pages that only start-up read.)
func releaseStartPages() (int64, error) {
	proxy.FreeHeap()
	return 0, nil
}

// releaseIdlePages does nothing here (on Linux it takes the executable's
// pages out of the resident set once traffic has stopped).
func releaseIdlePages() {}
