package kube

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/clawdapus/clawgo/internal/compile"
)

// Origin says where the cluster can get an image from.
type Origin string

// Origins of images.
const (
	// OriginBuild is an image the pod builds (build:): build it, push it.
	OriginBuild Origin = "build"
	// OriginLocal is an image built on this machine and on no registry:
	// clawgo/* images are built FROM scratch by scripts/images.sh.
	OriginLocal Origin = "local"
	// OriginRegistry names its registry; the cluster needs access to it.
	OriginRegistry Origin = "registry"
	// OriginDockerHub is a Docker Hub name: public if it exists there, and
	// to be pushed if it exists only on this machine.
	OriginDockerHub Origin = "docker-hub"
)

// localPrefix names the images this project builds locally.
const localPrefix = "clawgo/"

// Image is one image the manifests run.
type Image struct {
	Name   string
	Origin Origin
	// Build is the build context of an image the pod builds, relative to
	// the pod directory.
	Build string
	// ComposeV1Name is, for an image the pod builds without naming it,
	// the name docker-compose 1.x tags the build with; Name is then
	// Compose v2's (see compile.Workload).
	ComposeV1Name string
	// Workloads are the Deployments and StatefulSets running it, sorted.
	Workloads []string
}

// MustPush reports whether the image exists on no registry the cluster
// could pull from until someone pushes it.
func (i Image) MustPush() bool { return i.Origin == OriginBuild || i.Origin == OriginLocal }

// imageOf is the image a workload runs, as the plan names it: its
// image:, or for a service that builds without naming one, the name
// Compose v2 gives the build.
func (r *renderer) imageOf(w *compile.Workload) (string, error) {
	if w.Image == "" {
		return "", r.errf(w.Service, "image", "the service has neither image nor build, so a cluster has nothing to run", "add image: (or build:) to the service")
	}
	r.addImage(w.Image, w.Name, w.Build)
	if w.ComposeV1Image != "" {
		r.images[w.Image].ComposeV1Name = w.ComposeV1Image
	}
	return w.Image, nil
}

func (r *renderer) addImage(name, workload, build string) {
	im := r.images[name]
	if im == nil {
		im = &Image{Name: name, Origin: imageOrigin(name)}
		r.images[name] = im
	}
	if build != "" {
		im.Origin, im.Build = OriginBuild, build
	}
	if !slices.Contains(im.Workloads, workload) {
		im.Workloads = append(im.Workloads, workload)
		sort.Strings(im.Workloads)
	}
}

// imageOrigin classifies an image reference that the pod does not build.
func imageOrigin(ref string) Origin {
	if strings.HasPrefix(ref, localPrefix) {
		return OriginLocal
	}
	first, _, hasSlash := strings.Cut(ref, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") && first != "docker.io" && first != "index.docker.io" {
		return OriginRegistry
	}
	return OriginDockerHub
}

// imageNote says what to do about an image.
func imageNote(im Image) string {
	switch im.Origin {
	case OriginBuild:
		if im.ComposeV1Name != "" {
			// Compose generations name a build differently; the
			// manifests run Compose v2's name.
			return fmt.Sprintf("built from %s (`claw up` builds it as %s with Compose v2, as %s with docker-compose 1.x): build and push it", im.Build, im.Name, im.ComposeV1Name)
		}
		return fmt.Sprintf("built from %s: build and push it", im.Build)
	case OriginLocal:
		return "built on this machine (scripts/images.sh), on no registry: push it"
	case OriginRegistry:
		first, _, _ := strings.Cut(im.Name, "/")
		return "pulled from " + first + ": the cluster needs access"
	default:
		return "Docker Hub: push it too if it exists only on this machine"
	}
}
