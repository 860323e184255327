package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/clawdapus/clawgo/internal/compile"
)

// Before compose starts a pod, claw up makes sure the engine has every
// image a service runs without building it: one it lacks is pulled by
// claw, and one that cannot be pulled is refused in one message naming
// the service, the image and how to get it, rather than compose's pull
// error and its hints (docker-compose 1.29 even asks "Continue with the
// new image? [yN]" of a container whose image was removed). Images of
// services with a build section are compose's to build; its note on
// building one names its own commands and is said in claw's (see
// buildNoteFilter).

// ImageStore is what claw up asks the Docker engine about images.
type ImageStore interface {
	// Present reports whether the engine has the image; an error when it
	// cannot tell (compose then speaks for itself).
	Present(ctx context.Context, image string) (bool, error)
	// Pull pulls the image; an error says why it could not, in the
	// engine's words.
	Pull(ctx context.Context, image string) error
}

// newDockerImageStore is the docker CLI's ImageStore; nil without the CLI
// (compose is then left to pull).
func newDockerImageStore() ImageStore {
	bin, err := exec.LookPath("docker")
	if err != nil {
		return nil
	}
	return dockerImageStore{bin: bin}
}

type dockerImageStore struct{ bin string }

// maxDockerStderr bounds what is kept of the docker CLI's stderr.
const maxDockerStderr = 4 << 10

func (d dockerImageStore) Present(ctx context.Context, image string) (bool, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, d.bin, "image", "inspect", "--format", "{{.Id}}", image)
	cmd.Stdout, cmd.Stderr = io.Discard, &limitedBuffer{buf: &stderr, max: maxDockerStderr}
	if err := cmd.Run(); err != nil {
		msg := stderr.String()
		if strings.Contains(msg, "No such image") || strings.Contains(msg, "No such object") {
			return false, nil
		}
		return false, fmt.Errorf("docker image inspect %s: %v: %s", image, err, strings.TrimSpace(msg))
	}
	return true, nil
}

func (d dockerImageStore) Pull(ctx context.Context, image string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, d.bin, "pull", "-q", image)
	cmd.Stdout, cmd.Stderr = io.Discard, &limitedBuffer{buf: &stderr, max: maxDockerStderr}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s", pullReason(stderr.String(), err))
	}
	return nil
}

// pullReason is the first line of docker pull's stderr without the
// CLI's "Error response from daemon: ", or the exit error.
func pullReason(stderr string, err error) string {
	for _, line := range strings.Split(stderr, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return strings.TrimPrefix(line, "Error response from daemon: ")
		}
	}
	return err.Error()
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// upImages ensures the images of a compiled pod (see ensureImages) when
// the factory has an ImageStore.
func upImages(ctx context.Context, f *Factory, res *compile.Result) error {
	if f.ImageStore == nil {
		return nil
	}
	store := f.ImageStore()
	if store == nil {
		return nil
	}
	for _, file := range res.Output.Files {
		if file.Path != compile.GeneratedFile {
			continue
		}
		images, err := composeImages(file.Data)
		if err != nil {
			return fmt.Errorf("%s: %w", compile.GeneratedFile, err)
		}
		return ensureImages(ctx, store, images, f.IO.ErrOut)
	}
	return nil
}

// serviceImage is the image a service of compose.generated.yml runs.
type serviceImage struct {
	Service, Image string
	// Build says the service has a build section: compose builds the
	// image when it is missing.
	Build bool
}

// composeImages lists the services of a generated compose file that name
// an image, sorted by service.
func composeImages(generated []byte) ([]serviceImage, error) {
	var doc struct {
		Services map[string]struct {
			Image string    `yaml:"image"`
			Build yaml.Node `yaml:"build"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(generated, &doc); err != nil {
		return nil, err
	}
	var out []serviceImage
	for name, s := range doc.Services {
		if s.Image != "" {
			out = append(out, serviceImage{Service: name, Image: s.Image, Build: !s.Build.IsZero()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service < out[j].Service })
	return out, nil
}

// missingImage is an image a service runs that the engine has not and
// could not pull.
type missingImage struct {
	Services []string
	Image    string
	// Reason is why the pull failed, in the engine's words.
	Reason string
}

// ensureImages pulls each image the pod runs without building that the
// engine lacks, saying so on progress, and returns a *missingImagesError
// naming those it could not pull. Images whose presence the engine cannot
// tell are left to compose.
func ensureImages(ctx context.Context, store ImageStore, images []serviceImage, progress io.Writer) error {
	users := map[string][]string{}
	var order []string
	for _, si := range images {
		if si.Build {
			continue
		}
		if users[si.Image] == nil {
			order = append(order, si.Image)
		}
		users[si.Image] = append(users[si.Image], si.Service)
	}
	var missing []missingImage
	for _, image := range order {
		present, err := store.Present(ctx, image)
		if err != nil || present {
			continue
		}
		fmt.Fprintf(progress, "claw: pulling %s (%s), which is not on this machine\n", image, strings.Join(users[image], ", "))
		if err := store.Pull(ctx, image); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			missing = append(missing, missingImage{Services: users[image], Image: image, Reason: err.Error()})
		}
	}
	if len(missing) > 0 {
		return &missingImagesError{Missing: missing}
	}
	return nil
}

// missingImagesError refuses a pod whose images are not on this machine
// and cannot be pulled.
type missingImagesError struct{ Missing []missingImage }

func (e *missingImagesError) Error() string {
	var b strings.Builder
	hints := howToGet(e.Missing)
	if len(e.Missing) == 1 {
		m := e.Missing[0]
		fmt.Fprintf(&b, "service %s runs image %s, which is not on this machine and could not be pulled (%s); %s",
			strings.Join(m.Services, ", "), m.Image, m.Reason, hints[0])
		return b.String()
	}
	fmt.Fprintf(&b, "%d images of the pod are not on this machine and could not be pulled:", len(e.Missing))
	for _, m := range e.Missing {
		fmt.Fprintf(&b, "\n  %s: %s (%s)", strings.Join(m.Services, ", "), m.Image, m.Reason)
	}
	for _, h := range hints {
		b.WriteString("\n" + h)
	}
	return b.String()
}

// exampleImages are the images scripts/images.sh builds (PREFIX/<name>:TAG,
// clawgo/<name>:latest by default): the example pod's and cllama's.
var exampleImages = []string{"cllama", "claw-mcp-stdio", "claw-model", "example-trading-api", "example-openai-runner", "example-anthropic-runner", "example-mcp-runner"}

// imageRef splits an image reference into the part before its last path
// element, that element, and its tag.
var imageRef = regexp.MustCompile(`^(?:(.+)/)?([^/:@]+)(?::([^/@]+))?$`)

// howToGet says how to get images that cannot be pulled: one command
// building those this repository builds (per name prefix and tag), and
// the ways any other image comes.
func howToGet(missing []missingImage) []string {
	var hints, scripts []string
	names := map[string][]string{}
	for _, m := range missing {
		r := imageRef.FindStringSubmatch(m.Image)
		if r == nil || !slices.Contains(exampleImages, r[2]) {
			hints = append(hints, fmt.Sprintf("pull %s once its registry is reachable (`docker pull %s`), build it under that name, or give %s a build section (`claw up` builds a missing image, `claw up --build` rebuilds it)",
				m.Image, m.Image, strings.Join(m.Services, " and ")))
			continue
		}
		tag := r[3]
		if tag == "" {
			tag = "latest"
		}
		script := fmt.Sprintf("PREFIX=%s TAG=%s scripts/images.sh", r[1], tag)
		if r[1] == "clawgo" && tag == "latest" {
			script = "make images"
		}
		if names[script] == nil {
			scripts = append(scripts, script)
		}
		names[script] = append(names[script], r[2])
	}
	for _, script := range scripts {
		cmd := script
		if script != "make images" {
			cmd += " " + strings.Join(names[script], " ")
		}
		hints = append(hints, fmt.Sprintf("the clawgo repository builds the example pod's images on this machine, not on a registry: run `%s` there, then `claw up` again", cmd))
	}
	return hints
}

// buildNoteFilter passes compose's stderr through, but says
// docker-compose 1.x's note on an image it built because it was missing
// ("To rebuild this image you must use `docker-compose build` or
// `docker-compose up --build`") in claw's words. A partial line that may
// still become the note is held until its end; any other is passed on
// at once.
type buildNoteFilter struct {
	w       io.Writer
	line    []byte
	midLine bool
}

// buildNote matches the note, whatever its colours and level prefix.
var buildNote = regexp.MustCompile("Image for service (\\S+) was built because it did not already exist\\..*`docker-compose up --build`\\.")

const buildNoteStart = "Image for service "

// maxHeldLine bounds a held partial line.
const maxHeldLine = 1 << 10

// ansiEscape is a colour escape; ansiPartial one cut off at the end of
// what arrived so far.
var (
	ansiEscape  = regexp.MustCompile("\x1b\\[[0-9;]*m")
	ansiPartial = regexp.MustCompile("\x1b(\\[[0-9;]*)?$")
)

func (f *buildNoteFilter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if f.midLine {
			if i < 0 {
				return n, f.write(b)
			}
			f.midLine = false
			if err := f.write(b[:i+1]); err != nil {
				return 0, err
			}
			b = b[i+1:]
			continue
		}
		if i < 0 {
			f.line = append(f.line, b...)
			if !f.mayBeNote() {
				f.midLine = true
				return n, f.flush()
			}
			return n, nil
		}
		f.line = append(f.line, b[:i+1]...)
		b = b[i+1:]
		if m := buildNote.FindSubmatch(ansiEscape.ReplaceAll(f.line, nil)); m != nil {
			f.line = fmt.Appendf(f.line[:0], "claw: compose built the image of service %s, which was not on this machine; `claw up --build` rebuilds it\n", m[1])
		}
		if err := f.flush(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// mayBeNote reports whether the held partial line may still become the
// note.
func (f *buildNoteFilter) mayBeNote() bool {
	if len(f.line) > maxHeldLine {
		return false
	}
	s := ansiEscape.ReplaceAllString(string(f.line), "")
	s = strings.TrimSpace(ansiPartial.ReplaceAllString(s, ""))
	if rest, ok := strings.CutPrefix(s, "WARNING:"); ok {
		s = strings.TrimSpace(rest)
	}
	return strings.HasPrefix(s, buildNoteStart) || strings.HasPrefix(buildNoteStart, s) || strings.HasPrefix("WARNING:", s)
}

func (f *buildNoteFilter) write(b []byte) error {
	_, err := f.w.Write(b)
	return err
}

// flush writes the held line.
func (f *buildNoteFilter) flush() error {
	if len(f.line) == 0 {
		return nil
	}
	err := f.write(f.line)
	f.line = f.line[:0]
	return err
}
