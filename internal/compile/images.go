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
	"time"
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

// ErrEngineUnreachable is returned by ImageSource methods when the Docker
// engine does not answer, so whether an image is present (and what it
// holds) cannot be known.
var ErrEngineUnreachable = errors.New("the Docker engine is not reachable")

// Labels runs `docker image inspect`. An image the engine does not have is
// absent; an engine that does not answer is an error wrapping
// ErrEngineUnreachable, never a silently skipped image.
func (d DockerImages) Labels(ctx context.Context, image string) (map[string]string, bool, error) {
	if _, err := exec.LookPath(d.bin()); err != nil {
		return nil, false, nil
	}
	stderr := &headWriter{max: 4 << 10}
	cmd := exec.CommandContext(ctx, d.bin(), "image", "inspect", "--format", "{{json .Config.Labels}}", image)
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if noSuchImage(msg) || ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, false, fmt.Errorf("docker image inspect %s: %w: %s", image, ErrEngineUnreachable, firstLine(msg, err))
	}
	labels := map[string]string{}
	if s := strings.TrimSpace(string(out)); s != "" && s != "null" {
		if err := json.Unmarshal([]byte(s), &labels); err != nil {
			return nil, true, fmt.Errorf("docker image inspect %s: %w", image, err)
		}
	}
	return labels, true, nil
}

// noSuchImage recognises the docker CLI's report of an absent image
// ("Error: No such image: x", "Error response from daemon: No such image:
// x", and "No such object" of older engines).
func noSuchImage(stderr string) bool {
	return strings.Contains(stderr, "No such image") || strings.Contains(stderr, "No such object")
}

// firstLine is the first line of a command's stderr, or its exit error.
func firstLine(stderr string, err error) string {
	if line, _, _ := strings.Cut(stderr, "\n"); strings.TrimSpace(line) != "" {
		return strings.TrimSpace(line)
	}
	return err.Error()
}

// ReadFile creates a stopped container from the image, copies path out as
// a tar stream and removes the container. The stream is read up to the
// file limit only (a path may name a huge file or a directory such as /).
func (d DockerImages) ReadFile(ctx context.Context, image, path string) ([]byte, error) {
	create := exec.CommandContext(ctx, d.bin(), "create", image, "/claw-describe-probe")
	createErr := &headWriter{max: 4 << 10}
	create.Stderr = createErr
	out, err := create.Output()
	if err != nil {
		return nil, fmt.Errorf("docker create %s: %s", image, firstLine(strings.TrimSpace(createErr.String()), err))
	}
	id := strings.TrimSpace(string(out))
	defer func() {
		// Best effort, and still run when ctx is cancelled, but bounded.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
		_ = exec.CommandContext(rctx, d.bin(), "rm", "-f", id).Run()
	}()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stderr := &headWriter{max: 4 << 10}
	cmd := exec.CommandContext(cctx, d.bin(), "cp", id+":"+path, "-")
	cmd.Stderr = stderr
	// Stop waiting for the output pipes once docker cp has exited or been
	// stopped, should a child of it keep them open.
	cmd.WaitDelay = time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("docker cp %s:%s: %w", image, path, err)
	}
	// A tar of one file is the file plus headers and padding.
	lr := &io.LimitedReader{R: stdout, N: maxImageFile + 64<<10}
	data, found, readErr := firstRegularFile(lr)
	if !found {
		_, _ = io.Copy(io.Discard, lr)
	}
	if found || lr.N <= 0 {
		cancel() // stop docker cp rather than read the rest
	}
	waitErr := cmd.Wait()
	if readErr != nil {
		return nil, fmt.Errorf("%s in %s: %w", path, image, readErr)
	}
	if found {
		return data, nil
	}
	if waitErr != nil && lr.N > 0 {
		msg := stderr.String()
		if strings.Contains(msg, "No such") || strings.Contains(msg, "Could not find") {
			return nil, fmt.Errorf("%s in %s: %w", path, image, ErrNotInImage)
		}
		return nil, fmt.Errorf("docker cp %s:%s: %v: %s", image, path, waitErr, strings.TrimSpace(msg))
	}
	return nil, fmt.Errorf("%s in %s: %w", path, image, ErrNotInImage)
}

// removeTimeout bounds removing the probe container.
const removeTimeout = 30 * time.Second

// firstRegularFile returns the first regular file of a tar stream; found
// is false when the stream holds none (or is not a tar stream).
func firstRegularFile(r io.Reader) (data []byte, found bool, err error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, false, nil
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxImageFile+1))
		if err != nil {
			return nil, false, nil
		}
		if len(data) > maxImageFile {
			return nil, false, fmt.Errorf("larger than %d bytes", maxImageFile)
		}
		return data, true, nil
	}
}

// headWriter keeps the first max bytes written to it and discards the rest.
type headWriter struct {
	buf bytes.Buffer
	max int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (w *headWriter) String() string { return w.buf.String() }
