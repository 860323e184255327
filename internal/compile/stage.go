package compile

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// Staging and applying.
//
// cllama reads the live context (.claw-runtime/context, .claw-auth) while
// the pod runs, so writing a compile there would change running agents'
// grants the moment `claw compile` finishes. Instead a compile is staged
// (.claw-runtime/staging) and `claw up` applies it.
//
// The live context directory is the one the generated compose file
// mounts into cllama; it stays in place (a bind mount follows the
// directory it was created with, so it cannot be replaced). Inside it,
// each agent's entry is a symbolic link to a complete, never modified
// copy of that agent's files under .versions/, named by their digest:
//
//	.claw-runtime/context/analyst -> .versions/analyst-3f2a9c1d0e3b5a69
//
// Applying writes the new copies first, then switches each changed
// agent's link with one rename, so cllama sees an agent's old files or
// its new ones, never a mix nor a half-written file: it resolves the link
// once per load of an agent (package agentctx). Unchanged agents keep
// their link, and cllama sees no change for them. The copies the links
// pointed to before the switch are kept until the next apply, for a load
// that resolved its link just before.
//
// The runner files (RunnerDir: an agent's MCP client configuration) are
// staged beside the context and applied in place, like providers.json:
// cllama never reads them, and a runner reads its own when its container
// starts.

// Staging locations, relative to the pod directory.
const (
	StagingDir = ".claw-runtime/staging"
	// StagedContextDir, StagedProvidersFile: what ContextDir and
	// ProvidersFile hold once the compile is applied.
	StagedContextDir    = StagingDir + "/context"
	StagedProvidersFile = StagingDir + "/auth/providers.json"
	// StagedPodSettingsFile, StagedOperatorTokenFile: what
	// PodSettingsFile and OperatorTokenFile hold once applied.
	StagedPodSettingsFile   = StagingDir + "/auth/" + manifest.PodFile
	StagedOperatorTokenFile = StagingDir + "/auth/operator-token"
	// StagedRunnerDir is what RunnerDir holds once the compile is applied.
	StagedRunnerDir = StagingDir + "/runner"
	// RecordFile describes the staged compile (Record).
	RecordFile = StagingDir + "/compiled.json"
	// VersionsDir holds the agents' applied copies, inside the live
	// context directory so that cllama's mount includes them.
	VersionsDir = ContextDir + "/.versions"
)

// Record describes a staged compile: when, from which pod file, and the
// digests of the files it read, so tools tell a changed input from a
// touched one.
type Record struct {
	Version int `json:"version"`
	// PodFile is the pod file's name in the pod directory.
	PodFile  string    `json:"pod_file"`
	Compiled time.Time `json:"compiled"`
	// Inputs are Result.Inputs.
	Inputs map[string]string `json:"inputs"`
}

// RecordVersion is the Record format written here.
const RecordVersion = 1

// ReadRecord reads the staged compile's record in the pod directory dir;
// it returns an error wrapping fs.ErrNotExist for a pod compiled by a claw
// that staged nothing.
func ReadRecord(dir string) (*Record, error) {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(RecordFile)))
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", RecordFile, err)
	}
	return &r, nil
}

// Staged is the outcome of Stage.
type Staged struct {
	// Applied is true when the pod had no live context yet, so the compile
	// was applied at once (nothing running could be affected).
	Applied bool
	// Pending lists the agents whose live context differs from the staged
	// one (changed, added or removed), and "providers" when the provider
	// configuration does; empty when the live context is up to date.
	Pending []string
}

// Stage writes res under dir, the pod directory: compose.generated.yml in
// place (compose reads it only when told to), the agents' context and the
// providers into the staging tree, and the Record. A pod without a live
// context gets the compile applied at once.
func Stage(dir string, res *Result) (*Staged, error) {
	var staged []File
	for _, f := range res.Output.Files {
		switch {
		case f.Path == GeneratedFile:
			staged = append(staged, f)
		case f.Path == ProvidersFile:
			f.Path = StagedProvidersFile
			staged = append(staged, f)
		case f.Path == PodSettingsFile:
			f.Path = StagedPodSettingsFile
			staged = append(staged, f)
		case f.Path == OperatorTokenFile:
			f.Path = StagedOperatorTokenFile
			staged = append(staged, f)
		case strings.HasPrefix(f.Path, ContextDir+"/"):
			f.Path = StagedContextDir + strings.TrimPrefix(f.Path, ContextDir)
			staged = append(staged, f)
		case strings.HasPrefix(f.Path, RunnerDir+"/"):
			f.Path = StagedRunnerDir + strings.TrimPrefix(f.Path, RunnerDir)
			staged = append(staged, f)
		default:
			return nil, fmt.Errorf("compile: no staging place for %s", f.Path)
		}
	}
	stageRoot := filepath.Join(dir, filepath.FromSlash(StagingDir))
	// The staging tree holds tokens and credentials: the operator's only.
	if err := os.MkdirAll(stageRoot, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(stageRoot, 0o700); err != nil {
		return nil, err
	}
	if err := writeFiles(dir, staged, StagedContextDir, StagedRunnerDir); err != nil {
		return nil, err
	}
	rec := Record{Version: RecordVersion, PodFile: filepath.Base(res.Pod.File), Compiled: time.Now().UTC(), Inputs: res.Inputs}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := WriteAtomic(filepath.Join(dir, filepath.FromSlash(RecordFile)), append(data, '\n'), modeSecret); err != nil {
		return nil, err
	}
	if !hasLive(dir) {
		if _, err := Apply(dir); err != nil {
			return nil, err
		}
		return &Staged{Applied: true}, nil
	}
	pending, err := Pending(dir)
	if err != nil {
		return nil, err
	}
	return &Staged{Pending: pending}, nil
}

// hasLive reports whether the pod directory dir has a live context: a
// providers.json or an agent entry, applied by a claw (or written in place
// by an earlier one).
func hasLive(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(ProvidersFile))); err == nil {
		return true
	}
	des, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(ContextDir)))
	for _, de := range des {
		if manifest.ValidAgentID(de.Name()) {
			return true
		}
	}
	return false
}

// Applied is the outcome of Apply: the agents whose live context changed.
type Applied struct {
	Changed, Added, Removed []string
	// Providers is true when the provider configuration changed.
	Providers bool
	// PodSettings is true when the pod-wide settings (pod.json) changed:
	// cllama reads them as it starts, so it must be restarted.
	PodSettings bool
}

// Empty reports whether Apply changed nothing.
func (a *Applied) Empty() bool {
	return len(a.Changed)+len(a.Added)+len(a.Removed) == 0 && !a.Providers && !a.PodSettings
}

// Apply makes the staged compile in the pod directory dir the live one
// (see the top of this file). Running it again without a new compile
// changes nothing.
func Apply(dir string) (*Applied, error) {
	live := filepath.Join(dir, filepath.FromSlash(ContextDir))
	versions := filepath.Join(dir, filepath.FromSlash(VersionsDir))
	if err := os.MkdirAll(versions, 0o755); err != nil {
		return nil, err
	}
	changes, err := changesOf(dir)
	if err != nil {
		return nil, err
	}
	out := &Applied{}
	keep := map[string]bool{}
	for _, ag := range changes.agents {
		keep[ag.version] = true
		if ag.current != "" {
			keep[ag.current] = true
		}
		if ag.current == ag.version {
			continue
		}
		if err := materialise(filepath.Join(dir, filepath.FromSlash(StagedContextDir), ag.id), versions, ag.version); err != nil {
			return nil, err
		}
		if err := switchLink(live, ag.id, path.Join(path.Base(VersionsDir), ag.version)); err != nil {
			return nil, err
		}
		if ag.live {
			out.Changed = append(out.Changed, ag.id)
		} else {
			out.Added = append(out.Added, ag.id)
		}
	}
	for _, gone := range changes.removed {
		if err := removeLive(live, gone.id); err != nil {
			return nil, err
		}
		if gone.current != "" {
			keep[gone.current] = true
		}
		out.Removed = append(out.Removed, gone.id)
	}
	if changes.providers != nil {
		if err := writeFiles(dir, []File{*changes.providers}); err != nil {
			return nil, err
		}
		out.Providers = true
	}
	if changes.podSettings != nil {
		if err := writeFiles(dir, []File{*changes.podSettings}); err != nil {
			return nil, err
		}
		out.PodSettings = true
	}
	// The operator token changes only where there was none.
	if changes.operatorToken != nil {
		if err := writeFiles(dir, []File{*changes.operatorToken}); err != nil {
			return nil, err
		}
	}
	if len(changes.runnerChanged) > 0 {
		// Written in place: a runner reads its file when its container
		// starts, and compose recreates the container when the agent's
		// configuration (its token, its pod) changes, which is when the
		// file does.
		if err := writeFiles(dir, changes.runner, RunnerDir); err != nil {
			return nil, err
		}
		for _, id := range changes.runnerChanged {
			if !slices.Contains(out.Changed, id) && !slices.Contains(out.Added, id) && !slices.Contains(out.Removed, id) {
				out.Changed = append(out.Changed, id)
			}
		}
		sort.Strings(out.Changed)
	}
	// Copies neither in use nor just replaced go.
	des, err := os.ReadDir(versions)
	if err != nil {
		return nil, err
	}
	for _, de := range des {
		if !keep[de.Name()] {
			if err := os.RemoveAll(filepath.Join(versions, de.Name())); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Pending lists what Apply would change in the pod directory dir: agent
// ids, and "providers".
func Pending(dir string) ([]string, error) {
	p, err := changesOf(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ag := range p.agents {
		if ag.current != ag.version {
			out = append(out, ag.id)
		}
	}
	for _, ag := range p.removed {
		out = append(out, ag.id)
	}
	for _, id := range p.runnerChanged {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	if p.providers != nil {
		out = append(out, "providers")
	}
	if p.podSettings != nil {
		out = append(out, "pod settings")
	}
	return out, nil
}

// changeSet is what Apply changes in the live tree.
type changeSet struct {
	agents []agentChange
	// removed are live agents the staged compile no longer has.
	removed []agentChange
	// providers is the staged providers.json (at its live path) when it
	// differs from the live one.
	providers *File
	// podSettings is the staged pod.json likewise, operatorToken the
	// staged operator token.
	podSettings, operatorToken *File
	// runner is every staged runner file at its live path; runnerChanged
	// the agents whose live runner files differ (changed, added or gone).
	runner        []File
	runnerChanged []string
}

type agentChange struct {
	id string
	// version is the name of the copy of the staged files; current the
	// one the live link names ("" when the agent is not live, or is a
	// directory of an earlier claw).
	version, current string
	live             bool
}

// changesOf compares the staged compile in dir with the live tree.
func changesOf(dir string) (*changeSet, error) {
	stagedCtx := filepath.Join(dir, filepath.FromSlash(StagedContextDir))
	live := filepath.Join(dir, filepath.FromSlash(ContextDir))
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(RecordFile))); err != nil {
		return nil, fmt.Errorf("no staged compile (%s): %w; run `claw compile`", RecordFile, err)
	}
	p := &changeSet{}
	staged := map[string]bool{}
	des, err := os.ReadDir(stagedCtx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, de := range des {
		if !de.IsDir() || !manifest.ValidAgentID(de.Name()) {
			continue
		}
		id := de.Name()
		staged[id] = true
		sum, err := treeDigest(filepath.Join(stagedCtx, id))
		if err != nil {
			return nil, err
		}
		ag := agentChange{id: id, version: id + "-" + sum}
		ag.current, ag.live = liveVersion(live, id)
		p.agents = append(p.agents, ag)
	}
	lives, err := os.ReadDir(live)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, de := range lives {
		if id := de.Name(); manifest.ValidAgentID(id) && !staged[id] {
			ag := agentChange{id: id, live: true}
			ag.current, _ = liveVersion(live, id)
			p.removed = append(p.removed, ag)
		}
	}
	if p.runner, p.runnerChanged, err = runnerChanges(dir); err != nil {
		return nil, err
	}
	if p.providers, err = authChange(dir, StagedProvidersFile, ProvidersFile); err != nil {
		return nil, err
	}
	if p.podSettings, err = authChange(dir, StagedPodSettingsFile, PodSettingsFile); err != nil {
		return nil, err
	}
	if p.operatorToken, err = authChange(dir, StagedOperatorTokenFile, OperatorTokenFile); err != nil {
		return nil, err
	}
	return p, nil
}

// authChange returns the staged auth file at staged as the file to write
// at its live path, when it differs from the live one in bytes or mode;
// nil when it is the same or nothing is staged there.
func authChange(dir, staged, livePath string) (*File, error) {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(staged)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	full := filepath.Join(dir, filepath.FromSlash(livePath))
	old, oerr := os.ReadFile(full)
	st, serr := os.Stat(full)
	if oerr != nil || serr != nil || !bytes.Equal(old, data) || st.Mode().Perm() != modeSecret {
		return &File{Path: livePath, Data: data, Mode: modeSecret}, nil
	}
	return nil, nil
}

// runnerChanges reads the staged runner files (at their live paths) and
// lists the agents whose live runner files differ from them in bytes or
// mode, or that have live runner files no longer staged.
func runnerChanges(dir string) (staged []File, changed []string, err error) {
	stagedRoot := filepath.Join(dir, filepath.FromSlash(StagedRunnerDir))
	liveRoot := filepath.Join(dir, filepath.FromSlash(RunnerDir))
	ids := map[string]bool{}
	agentOf := func(rel string) string { id, _, _ := strings.Cut(rel, "/"); return id }
	err = regularFiles(stagedRoot, func(rel string, data []byte, mode fs.FileMode) error {
		staged = append(staged, File{Path: RunnerDir + "/" + rel, Data: data, Mode: mode})
		full := filepath.Join(liveRoot, filepath.FromSlash(rel))
		old, oerr := os.ReadFile(full)
		st, serr := os.Stat(full)
		if oerr != nil || serr != nil || !bytes.Equal(old, data) || st.Mode().Perm() != mode {
			ids[agentOf(rel)] = true
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	err = regularFiles(liveRoot, func(rel string, _ []byte, _ fs.FileMode) error {
		if _, err := os.Stat(filepath.Join(stagedRoot, filepath.FromSlash(rel))); err != nil {
			ids[agentOf(rel)] = true
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return staged, sortedKeys(ids), nil
}

// regularFiles calls fn with every regular file under root: its path
// relative to root (slash-separated), bytes and permissions. A missing
// root holds none.
func regularFiles(root string, fn func(rel string, data []byte, mode fs.FileMode) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), data, info.Mode().Perm())
	})
}

// liveVersion returns the copy an agent's live link names; live is false
// when the agent has no live entry.
func liveVersion(liveDir, id string) (version string, live bool) {
	entry := filepath.Join(liveDir, id)
	fi, err := os.Lstat(entry)
	if err != nil {
		return "", false
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return "", true // a directory an earlier claw wrote in place
	}
	target, err := os.Readlink(entry)
	if err != nil {
		return "", true
	}
	if d, name := path.Split(filepath.ToSlash(target)); d == path.Base(VersionsDir)+"/" {
		if _, err := os.Stat(filepath.Join(liveDir, filepath.FromSlash(target))); err == nil {
			return name, true
		}
	}
	return "", true
}

// versionDigestLen is how many hex digits of a copy's digest name it.
const versionDigestLen = 16

// treeDigest summarises every file under root: its path, mode and bytes.
func treeDigest(root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%o\x00", filepath.ToSlash(rel), info.Mode())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%d\x00", len(data))
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:versionDigestLen], nil
}

// materialise copies the staged agent directory src to versions/name,
// complete before it appears under that name. An existing copy of the
// same digest is reused.
func materialise(src, versions, name string) error {
	final := filepath.Join(versions, name)
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	tmp := filepath.Join(versions, ".tmp-"+name+"-"+randomSuffix())
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(tmp, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(dst, info.Mode().Perm())
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, info.Mode().Perm())
	})
	if err == nil {
		err = syncTree(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("applying %s: %w", name, err)
	}
	return nil
}

// syncTree flushes a new copy's files before it is switched to, so a
// crash cannot leave a link to empty files.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}

// switchLink points liveDir/id at target with one rename. A directory an
// earlier claw wrote in place is exchanged with the link atomically where
// the system can (renameat2 RENAME_EXCHANGE), then removed.
func switchLink(liveDir, id, target string) error {
	tmp := filepath.Join(liveDir, "."+id+".link-"+randomSuffix())
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	entry := filepath.Join(liveDir, id)
	fi, err := os.Lstat(entry)
	if err == nil && fi.IsDir() {
		if err := exchange(tmp, entry); err == nil {
			return os.RemoveAll(tmp) // now the old directory
		}
		// No atomic exchange here: move the directory aside first.
		aside := filepath.Join(liveDir, "."+id+".old-"+randomSuffix())
		if err := os.Rename(entry, aside); err != nil {
			os.Remove(tmp)
			return err
		}
		defer os.RemoveAll(aside)
	}
	if err := os.Rename(tmp, entry); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// removeLive takes an agent out of the live context.
func removeLive(liveDir, id string) error {
	entry := filepath.Join(liveDir, id)
	fi, err := os.Lstat(entry)
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		aside := filepath.Join(liveDir, "."+id+".old-"+randomSuffix())
		if err := os.Rename(entry, aside); err != nil {
			return err
		}
		return os.RemoveAll(aside)
	}
	return os.Remove(entry)
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
