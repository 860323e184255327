package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// Digest is how compile records a file's content: "sha256:<hex>".
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// FileDigest is the Digest of the file at path.
func FileDigest(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return Digest(data), nil
}

// input records a file the compile read, by its path relative to the pod
// directory.
func (b *builder) input(full string, data []byte) {
	b.inputs[b.relToPod(full)] = Digest(data)
}

func (b *builder) relToPod(full string) string {
	if rel, err := filepath.Rel(b.pod.Dir, full); err == nil {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(full)
}

// podInputs records the pod file and the .env beside it (which compose
// reads for interpolation).
func (b *builder) podInputs() {
	for _, full := range []string{PodFilePath(b.pod.Dir, b.pod.File), filepath.Join(b.pod.Dir, ".env")} {
		if data, err := os.ReadFile(full); err == nil {
			b.input(full, data)
		}
	}
}

// PodFilePath is the pod file named file (as given) in its directory dir.
func PodFilePath(dir, file string) string {
	return filepath.Join(dir, filepath.Base(file))
}
