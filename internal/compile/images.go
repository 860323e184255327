package compile

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// ImageSource reads descriptors from locally present images. Implementations
// must not pull: an image that is not present is reported as absent.
type ImageSource interface {
	// Labels returns the image's labels; present is false when the image
	// is not available locally.
	Labels(ctx context.Context, image string) (labels map[string]string, present bool, err error)
	// ReadFile returns a file from the image's filesystem, or an error
	// satisfying errors.Is(err, ErrNotInImage) when it is absent.
	ReadFile(ctx context.Context, image, path string) ([]byte, error)
}

// ErrNotInImage is returned by ImageSource.ReadFile for a missing file.
var ErrNotInImage = errors.New("file not in image")

// DockerImages is an ImageSource backed by the docker CLI. It never pulls.
// When the docker binary is missing every image is reported absent.
type DockerImages struct {
	// Binary is the docker executable; default "docker".
	Binary string
}

func (d DockerImages) bin() string {
	if d.Binary == "" {
		return "docker"
	}
	return d.Binary
}

// maxImageFile bounds a file copied out of an image.
const maxImageFile = 8 << 20

// Labels runs `docker image inspect`.
func (d DockerImages) Labels(ctx context.Context, image string) (map[string]string, bool, error) {
	if _, err := exec.LookPath(d.bin()); err != nil {
		return nil, false, nil
	}
	out, err := exec.CommandContext(ctx, d.bin(), "image", "inspect", "--format", "{{json .Config.Labels}}", image).Output()
	if err != nil {
		// Absent image (or an unreachable daemon): skip gracefully.
		return nil, false, nil
	}
	labels := map[string]string{}
	if s := strings.TrimSpace(string(out)); s != "" && s != "null" {
		if err := json.Unmarshal([]byte(s), &labels); err != nil {
			return nil, true, fmt.Errorf("docker image inspect %s: %w", image, err)
		}
	}
	return labels, true, nil
}

// ReadFile creates a stopped container from the image, copies path out as
// a tar stream and removes the container.
func (d DockerImages) ReadFile(ctx context.Context, image, path string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, d.bin(), "create", image, "/claw-describe-probe").Output()
	if err != nil {
		return nil, fmt.Errorf("docker create %s: %w", image, err)
	}
	id := strings.TrimSpace(string(out))
	defer func() {
		// Best effort; a fresh context so cancellation still cleans up.
		_ = exec.Command(d.bin(), "rm", "-f", id).Run()
	}()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, d.bin(), "cp", id+":"+path, "-")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "No such") || strings.Contains(stderr.String(), "Could not find") {
			return nil, fmt.Errorf("%s in %s: %w", path, image, ErrNotInImage)
		}
		return nil, fmt.Errorf("docker cp %s:%s: %v: %s", image, path, err, strings.TrimSpace(stderr.String()))
	}
	tr := tar.NewReader(&stdout)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("%s in %s: %w", path, image, ErrNotInImage)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(io.LimitReader(tr, maxImageFile+1))
			if err != nil {
				return nil, err
			}
			if len(data) > maxImageFile {
				return nil, fmt.Errorf("%s in %s is larger than %d bytes", path, image, maxImageFile)
			}
			return data, nil
		}
	}
}
