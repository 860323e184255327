// Package durable replaces a file so that a crash at any moment leaves
// either the old content or the new one, never a part, and the new one
// once the call returns: the one rule for the state files cllama and claw
// rewrite whole (the spend ledger's snapshot, key-pool state, kept
// results, discovered descriptors, compiled output).
package durable

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// Replace makes path hold parts, written one after the other, with
// permissions perm: a temporary file in path's directory (its name
// starting with tempPrefix, so an owner can find one a crash left
// behind) is written, fsync'ed and renamed over path, and the directory
// is fsync'ed so the new name survives a power loss too. On an error the
// temporary file is removed and path is as it was, unless the error came
// from the directory's fsync (the rename has happened; only its
// durability is unknown).
func Replace(path, tempPrefix string, perm os.FileMode, parts ...[]byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	for _, p := range parts {
		if _, err = tmp.Write(p); err != nil {
			break
		}
	}
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory, so that names created or renamed in it
// survive a power loss. Filesystems that cannot fsync a directory
// (EINVAL) make renames as durable as they can; that is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
