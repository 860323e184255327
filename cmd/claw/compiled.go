package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// ErrStale is returned by the reporting verbs (audit, inspect, history)
// when the pod file changed after the pod was compiled: what they would
// report no longer describes the file the operator is looking at. The pod
// file's content decides, not its modification time (a touched file is
// not a changed one).
var ErrStale = errors.New("the pod file changed since it was compiled")

// ErrNotCompiled is returned when the pod has no compiled output.
var ErrNotCompiled = errors.New("the pod has not been compiled")

// compiledPod is a pod's generated files, located from the pod file
// without loading it: the reporting verbs read what `claw compile` (or
// `claw up`) wrote, not the pod file itself.
type compiledPod struct {
	// File is the pod file as given; Dir its absolute directory.
	File, Dir string
	// Compiled is when the pod was compiled.
	Compiled time.Time
	// ContextDir is the compiled agents' context directory, relative to
	// Dir: the staged compile, or for a pod compiled by an earlier claw
	// (no record) the context it wrote in place.
	ContextDir string
	// Record is the staged compile's record; nil for an earlier claw's.
	Record *compile.Record
	// Agents are the compiled agent ids, sorted.
	Agents []string
	// Name is the pod name recorded in the agents' metadata.json; empty
	// when the pod has no agents.
	Name string
}

// openCompiled locates the compiled files of the pod file and refuses a
// pod file that changed since.
func openCompiled(file string) (*compiledPod, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, trimPath(err))
	}
	cp := &compiledPod{File: file, Dir: filepath.Dir(abs)}
	gen := filepath.Join(cp.Dir, compile.GeneratedFile)
	gi, err := os.Stat(gen)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (%s not found); run `claw compile -f %s` first", file, ErrNotCompiled, compile.GeneratedFile, file)
	}
	if err != nil {
		return nil, err
	}
	refresh := fmt.Sprintf("run `claw compile -f %s` to refresh it, then retry", file)
	rec, err := compile.ReadRecord(cp.Dir)
	switch {
	case err == nil:
		cp.Record, cp.Compiled, cp.ContextDir = rec, rec.Compiled, compile.StagedContextDir
		name := filepath.Base(abs)
		if rec.PodFile != name {
			return nil, fmt.Errorf("%s: %w (the compiled pod is %s's); %s", file, ErrStale, rec.PodFile, refresh)
		}
		if d, err := compile.FileDigest(abs); err != nil || d != rec.Inputs[name] {
			return nil, fmt.Errorf("%s: %w (compiled %s); %s", file, ErrStale, rec.Compiled.Format(time.RFC3339), refresh)
		}
	case errors.Is(err, os.ErrNotExist):
		// Compiled by a claw that recorded no digests: go by time.
		cp.Compiled, cp.ContextDir = gi.ModTime(), compile.ContextDir
		if fi.ModTime().After(gi.ModTime()) {
			return nil, fmt.Errorf("%s: %w (changed %s, compiled %s); %s",
				file, ErrStale, fi.ModTime().UTC().Format(time.RFC3339), gi.ModTime().UTC().Format(time.RFC3339), refresh)
		}
	default:
		return nil, fmt.Errorf("%s: %w; %s", file, err, refresh)
	}
	ctxDir := filepath.Join(cp.Dir, filepath.FromSlash(cp.ContextDir))
	des, err := os.ReadDir(ctxDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, de := range des {
		if !manifest.ValidAgentID(de.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(ctxDir, de.Name(), "metadata.json"))
		if err != nil {
			continue
		}
		cp.Agents = append(cp.Agents, de.Name())
		if md, err := manifest.ParseMetadata(data, de.Name()); err == nil && cp.Name == "" {
			cp.Name = md.Pod
		}
	}
	sort.Strings(cp.Agents)
	return cp, nil
}

// changed reports whether a file the compile read (relative to the pod
// directory) differs now; without a record, whether it was modified after
// the compile.
func (cp *compiledPod) changed(rel string) bool {
	full := filepath.Join(cp.Dir, filepath.FromSlash(rel))
	if cp.Record != nil {
		want, ok := cp.Record.Inputs[rel]
		if !ok {
			return false
		}
		got, err := compile.FileDigest(full)
		return err != nil || got != want
	}
	fi, err := os.Stat(full)
	return err == nil && fi.ModTime().After(cp.Compiled)
}

// historyDir is the pod's session-history directory.
func (cp *compiledPod) historyDir() string {
	return filepath.Join(cp.Dir, filepath.FromSlash(compile.HistoryDir))
}

// hasAgent reports whether id is a compiled agent.
func (cp *compiledPod) hasAgent(id string) bool {
	i := sort.SearchStrings(cp.Agents, id)
	return i < len(cp.Agents) && cp.Agents[i] == id
}

func trimPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// toolReadOnly returns a lookup of the readOnly annotation of the tools in
// each compiled agent's tools.json, read once.
func (cp *compiledPod) toolReadOnly() func(agent, tool string) (bool, bool) {
	byAgent := map[string]map[string]bool{}
	for _, id := range cp.Agents {
		data, err := os.ReadFile(filepath.Join(cp.Dir, filepath.FromSlash(cp.ContextDir), id, "tools.json"))
		if err != nil {
			continue
		}
		tm, err := manifest.ParseTools(data)
		if err != nil {
			continue
		}
		m := map[string]bool{}
		for _, t := range tm.Tools {
			m[t.Name] = t.Annotations.IsReadOnly()
		}
		byAgent[id] = m
	}
	return func(agent, tool string) (bool, bool) {
		ro, ok := byAgent[agent][tool]
		return ro, ok
	}
}
