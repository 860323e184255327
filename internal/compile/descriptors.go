package compile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/clawdapus/clawgo/internal/capability"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// Descriptor source kinds, in lookup order (issue 5, spec 002).
const (
	SourceDescribeFile = "describe-file"
	SourceDiscovered   = "discovered"
	SourceImageLabel   = "image-label"
	SourceImage        = "image"
	SourceBuildContext = "build-context"
)

// Well-known descriptor file names.
const (
	DescribeFileName  = ".claw-describe.json"
	ToolsSnapshotName = ".claw-tools.json"
	DiscoveredDir     = ".claw-discovered"
	DescribeLabel     = "claw.describe"
)

// ServiceDescriptor is a service's descriptor and where it came from.
type ServiceDescriptor struct {
	Service    string
	Descriptor *capability.Descriptor
	// Kind is one of the Source* constants; Location is the file (relative
	// to the pod directory) or "image:path".
	Kind     string
	Location string
	// readSkill loads the descriptor's skill file.
	readSkill func(ctx context.Context) ([]byte, error)
	// discovery is the metadata `claw discover` recorded, if any.
	discovery *discoveryMeta
}

type discoveryMeta struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Image   string   `json:"image"`
}

// lookupDescriptor finds svc's descriptor in the documented order:
// x-claw.describe-file; .claw-discovered/<service>.claw-describe.json; a
// local image's claw.describe label or /.claw-describe.json (or a baked
// /.claw-tools.json); the build context's .claw-describe.json (or
// .claw-tools.json). It returns nil when the service has none.
func (b *builder) lookupDescriptor(ctx context.Context, svc *pod.Service) (*ServiceDescriptor, error) {
	if svc.Claw != nil && svc.Claw.DescribeFile != "" {
		rel := svc.Claw.DescribeFile
		sd, err := b.fileDescriptor(svc.Name, SourceDescribeFile, rel)
		if errors.Is(err, os.ErrNotExist) {
			return nil, &pod.Error{File: b.pod.File, Service: svc.Name, Key: "x-claw.describe-file", Problem: fmt.Sprintf("%s does not exist", rel), Fix: "point describe-file at the service's claw.describe JSON, relative to the pod file"}
		}
		return sd, err
	}
	discovered := path.Join(DiscoveredDir, svc.Name+".claw-describe.json")
	if sd, err := b.fileDescriptor(svc.Name, SourceDiscovered, discovered); !errors.Is(err, os.ErrNotExist) {
		return sd, err
	}
	if b.opts.Images != nil && svc.Compose.Image != "" {
		sd, err := b.imageDescriptor(ctx, svc)
		if sd != nil || err != nil {
			return sd, err
		}
	}
	if svc.Compose.Build != nil && svc.Compose.Build.Context != "" && !strings.Contains(svc.Compose.Build.Context, "://") {
		for _, name := range []string{DescribeFileName, ToolsSnapshotName} {
			rel := filepath.ToSlash(filepath.Join(svc.Compose.Build.Context, name))
			if filepath.IsAbs(svc.Compose.Build.Context) {
				if r, err := filepath.Rel(b.pod.Dir, filepath.Join(svc.Compose.Build.Context, name)); err == nil {
					rel = filepath.ToSlash(r)
				}
			}
			if sd, err := b.fileDescriptor(svc.Name, SourceBuildContext, rel); !errors.Is(err, os.ErrNotExist) {
				return sd, err
			}
		}
	}
	return nil, nil
}

// fileDescriptor reads a descriptor at rel (relative to the pod directory).
// It returns an error wrapping os.ErrNotExist when the file is absent.
func (b *builder) fileDescriptor(service, kind, rel string) (*ServiceDescriptor, error) {
	full := rel
	if !filepath.IsAbs(full) {
		full = filepath.Join(b.pod.Dir, filepath.FromSlash(rel))
	}
	data, err := readBounded(full, capability.MaxDescriptorBytes)
	if err != nil {
		return nil, err
	}
	b.input(full, data)
	sd, err := parseDescriptorBytes(service, kind, rel, data)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(full)
	sd.readSkill = func(context.Context) ([]byte, error) {
		return readSkillInDir(dir, sd.Descriptor.Skill)
	}
	return sd, nil
}

// maxSkillBytes bounds a skill file.
const maxSkillBytes = 1 << 20

// readSkillInDir reads a descriptor's skill file from inside dir, the
// descriptor's directory. The descriptor validator rejects ".." paths;
// opening through an os.Root also refuses symlinks that lead out of dir,
// so a build context cannot make claw copy an arbitrary host file into
// the skills agents mount.
func readSkillInDir(dir, skill string) ([]byte, error) {
	rel := strings.TrimLeft(path.Clean("/"+skill), "/")
	f, err := os.OpenInRoot(dir, filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBoundedFile(f, skill, maxSkillBytes)
}

func (b *builder) imageDescriptor(ctx context.Context, svc *pod.Service) (*ServiceDescriptor, error) {
	image := svc.Compose.Image
	labels, present, err := b.opts.Images.Labels(ctx, image)
	if errors.Is(err, ErrEngineUnreachable) {
		// The image may carry the descriptor that decides this service's
		// tools: compiling without it would be a different pod.
		return nil, &pod.Error{File: "image " + image, Service: svc.Name, Problem: "cannot read the image's descriptor: " + err.Error(), Fix: "start the Docker engine (or check DOCKER_HOST), or compile without reading images (`claw compile` without --images)"}
	}
	if err != nil || !present {
		return nil, err
	}
	candidates := []struct{ kind, path string }{}
	if p := labels[DescribeLabel]; p != "" {
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		candidates = append(candidates, struct{ kind, path string }{SourceImageLabel, p})
	}
	candidates = append(candidates,
		struct{ kind, path string }{SourceImage, "/" + DescribeFileName},
		struct{ kind, path string }{SourceImage, "/" + ToolsSnapshotName})
	for _, c := range candidates {
		data, err := b.opts.Images.ReadFile(ctx, image, c.path)
		if errors.Is(err, ErrNotInImage) {
			if c.kind == SourceImageLabel {
				return nil, &pod.Error{File: "image " + image, Service: svc.Name, Key: "label " + DescribeLabel, Problem: fmt.Sprintf("names %s, which is not in the image", c.path), Fix: "fix the image's claw.describe label or bake the descriptor at that path"}
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		b.progress("%s: descriptor read from image %s (%s)", svc.Name, image, c.path)
		loc := "image " + image + ":" + c.path
		sd, err := parseDescriptorBytes(svc.Name, c.kind, loc, data)
		if err != nil {
			return nil, err
		}
		dir := path.Dir(c.path)
		sd.readSkill = func(ctx context.Context) ([]byte, error) {
			p := sd.Descriptor.Skill
			if !strings.HasPrefix(p, "/") {
				p = path.Join(dir, p)
			}
			return b.opts.Images.ReadFile(ctx, image, p)
		}
		return sd, nil
	}
	b.progress("%s: image %s has no descriptor", svc.Name, image)
	return nil, nil
}

// progress tells Options.Progress what a slow step (reading an image)
// found.
func (b *builder) progress(format string, args ...any) {
	if b.opts.Progress != nil {
		b.opts.Progress(fmt.Sprintf(format, args...))
	}
}

func parseDescriptorBytes(service, kind, loc string, data []byte) (*ServiceDescriptor, error) {
	var d *capability.Descriptor
	var err error
	if strings.HasSuffix(loc, ToolsSnapshotName) {
		d, err = capability.ParseToolsSnapshot(data)
	} else {
		d, err = capability.ParseDescriptor(data)
	}
	if err != nil {
		e := &pod.Error{File: loc, Service: service, Problem: "invalid descriptor: " + err.Error(), Fix: "correct the descriptor (docs/pod-file.md: \"Descriptor fields\")"}
		var fe *capability.FieldError
		if errors.As(err, &fe) {
			e.Key, e.Problem = fe.Field, "invalid descriptor: "+fe.Problem
		}
		return nil, e
	}
	sd := &ServiceDescriptor{Service: service, Descriptor: d, Kind: kind, Location: loc}
	var meta struct {
		Discovery *discoveryMeta `json:"discovery"`
	}
	if json.Unmarshal(data, &meta) == nil {
		sd.discovery = meta.Discovery
	}
	return sd, nil
}

// discoveryDrift reports how a stdio MCP service changed since discovery.
func discoveryDrift(svc *pod.Service, sd *ServiceDescriptor) string {
	if sd.discovery == nil || svc.Claw == nil || svc.Claw.MCPStdio == nil {
		return ""
	}
	m, dm := svc.Claw.MCPStdio, sd.discovery
	var changed []string
	if dm.Command != "" && dm.Command != m.Command {
		changed = append(changed, "command")
	}
	if dm.Args != nil && !slices.Equal(dm.Args, m.Args) {
		changed = append(changed, "args")
	}
	if dm.Image != "" && dm.Image != svc.Compose.Image {
		changed = append(changed, "image")
	}
	if len(changed) == 0 {
		return ""
	}
	return fmt.Sprintf("service %q: %s changed since %s was discovered; run `claw discover %s`", svc.Name, strings.Join(changed, ", "), sd.Location, svc.Name)
}

func readBounded(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBoundedFile(f, name, limit)
}

func readBoundedFile(f *os.File, name string, limit int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory: %w", name, os.ErrNotExist)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return data, nil
}

// overrideAnnotations applies the service's x-claw.tool-annotations to
// its descriptor's tools: what the operator vouches for wins over what the
// service declares (a discovered MCP tool has no parallel_safe at all).
// A name the service does not declare is an error, not a silent no-op.
func (b *builder) overrideAnnotations(svc *pod.Service, sd *ServiceDescriptor) error {
	if svc.Claw == nil || len(svc.Claw.ToolAnnotations) == 0 {
		return nil
	}
	var names []string
	byName := map[string]int{}
	if sd != nil {
		for i, t := range sd.Descriptor.Tools {
			names = append(names, t.Name)
			byName[t.Name] = i
		}
	}
	for _, name := range slices.Sorted(maps.Keys(svc.Claw.ToolAnnotations)) {
		i, ok := byName[name]
		if !ok {
			fix := "name one of the service's tools (" + strings.Join(names, ", ") + ")"
			if sd == nil {
				fix = "describe the service first (claw.describe, or `claw discover` for an MCP server); it declares no tools yet"
			}
			return &pod.Error{File: b.pod.File, Service: svc.Name, Key: "x-claw.tool-annotations." + name,
				Problem: pod.DidYouMean(name, names) + "the service declares no tool " + strconv.Quote(name), Fix: fix}
		}
		o := svc.Claw.ToolAnnotations[name]
		t := &sd.Descriptor.Tools[i]
		a := manifest.Annotations{}
		if t.Annotations != nil {
			a = *t.Annotations
		}
		if o.ParallelSafe != nil {
			v := *o.ParallelSafe
			a.ParallelSafe = &v
		}
		t.Annotations = &a
	}
	return nil
}
