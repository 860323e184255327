//go:build !linux

package compile

import "errors"

// exchange swaps two paths atomically where the system can; here it
// cannot, and the caller falls back to two renames.
func exchange(a, b string) error { return errors.ErrUnsupported }
