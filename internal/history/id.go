package history

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns a random entry id ("h_" and 24 hex digits). Writers use it
// when an entry arrives without one; cllama normally passes its request id.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "h_" + hex.EncodeToString(b[:])
}
