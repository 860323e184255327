//go:build !unix

package history

// lockAlone reports true where flock(2) is not available: one Writer per
// file is then the operator's to keep.
func lockAlone(appendFile) bool { return true }

// lockShared does nothing where flock(2) is not available.
func lockShared(appendFile) {}
