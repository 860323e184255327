//go:build !unix

package history

import "net"

// writeParts writes a line's parts to f one after the other.
func writeParts(f appendFile, parts net.Buffers) error {
	_, err := parts.WriteTo(f)
	return err
}
