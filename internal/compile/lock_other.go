//go:build !unix

package compile

import "os"

// Without flock, claw does not serialise itself.
func tryLock(*os.File) error { return nil }

func unlock(*os.File) error { return nil }
