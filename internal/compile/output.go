package compile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/durable"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// File is one generated file, its path relative to the pod directory
// (slash-separated).
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode
}

// Output is the whole generated tree, sorted by path.
type Output struct {
	Files []File
}

// File modes: secrets (tokens, projected credentials, provider keys) are
// 0600 and read only by cllama; what agents mount is 0644.
const (
	modeSecret = 0o600
	modePublic = 0o644
)

// secretBytes is the token's random part: 24 bytes, 48 hex digits.
const secretBytes = 24

var tokenSecretPattern = regexp.MustCompile(`^[0-9a-f]{48}$`)

// token returns the agent's token, reusing a valid previous one so an
// unchanged pod recompiles to identical bytes.
func (b *builder) token(id string) (string, error) {
	prev, ok := b.opts.KeepTokens[id]
	if !ok && b.opts.KeepTokens == nil {
		// The staged compile's token, else the live one (a pod compiled
		// by an earlier claw has only that).
		for _, ctx := range []string{StagedContextDir, ContextDir} {
			data, err := os.ReadFile(filepath.Join(b.pod.Dir, filepath.FromSlash(ctx), id, "metadata.json"))
			if err != nil {
				continue
			}
			if m, err := manifest.ParseMetadata(data, id); err == nil {
				prev, ok = m.Token, true
				break
			}
		}
	}
	if ok {
		if pid, secret, valid := manifest.SplitToken(prev); valid && pid == id && tokenSecretPattern.MatchString(secret) {
			return prev, nil
		}
	}
	buf := make([]byte, secretBytes)
	if _, err := io.ReadFull(b.opts.Rand, buf); err != nil {
		return "", fmt.Errorf("generating the token of %s: %w", id, err)
	}
	return id + ":" + hex.EncodeToString(buf), nil
}

// podSettings is pod.json: the settings cllama applies to the whole pod.
func (b *builder) podSettings() manifest.Pod {
	return manifest.Pod{Version: manifest.PodVersion, Name: b.pod.Name, Alerts: b.pod.Claw.Alerts,
		Pricing: b.pod.Claw.CllamaDefaults.Pricing, PodBudget: b.pod.Claw.PodBudget}
}

// podSettingsDigest names the content of pod.json in cllama's
// environment, so that compose recreates cllama (which reads the file as
// it starts) when it changes. It is a digest: the file holds a secret.
func (b *builder) podSettingsDigest() (string, error) {
	data, err := manifest.MarshalIndentJSON(b.podSettings())
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// operatorTokenPattern is an operator token: 32 random bytes in hex.
var operatorTokenPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// operatorToken returns the operator token of cllama's admin listener,
// keeping the staged or live one so a recompile does not log the
// operator out.
func (b *builder) operatorToken() (string, error) {
	if b.opts.KeepTokens == nil {
		for _, p := range []string{StagedOperatorTokenFile, OperatorTokenFile} {
			data, err := os.ReadFile(filepath.Join(b.pod.Dir, filepath.FromSlash(p)))
			if tok := strings.TrimSpace(string(data)); err == nil && operatorTokenPattern.MatchString(tok) {
				return tok, nil
			}
		}
	} else if tok, ok := b.opts.KeepTokens[OperatorTokenFile]; ok {
		return tok, nil
	}
	buf := make([]byte, 32)
	if _, err := io.ReadFull(b.opts.Rand, buf); err != nil {
		return "", fmt.Errorf("generating the operator token: %w", err)
	}
	return hex.EncodeToString(buf), nil
}

// contextFiles are the output files but the compose file: every agent's
// context, the runners' own files and providers.json, sorted by path.
func (b *builder) contextFiles(agents []*Agent, providers *manifest.Providers) ([]File, error) {
	out := &Output{}
	add := func(p string, mode fs.FileMode, data []byte) {
		out.Files = append(out.Files, File{Path: p, Data: data, Mode: mode})
	}
	addJSON := func(p string, mode fs.FileMode, v any) error {
		data, err := manifest.MarshalIndentJSON(v)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", p, err)
		}
		add(p, mode, data)
		return nil
	}
	for _, a := range agents {
		dir := path.Join(ContextDir, a.ID)
		md := manifest.Metadata{Token: a.Token, Pod: b.pod.Name, Service: a.Service, Type: b.agentType(a), Models: a.Models, Budget: a.Budget}
		if err := addJSON(path.Join(dir, "metadata.json"), modeSecret, md); err != nil {
			return nil, err
		}
		if a.agentsMD != nil {
			add(path.Join(dir, "AGENTS.md"), modePublic, a.agentsMD)
		}
		add(path.Join(dir, "CLAWDAPUS.md"), modePublic, b.clawdapusMD(a))
		if a.Cllama {
			if len(a.tools) > 0 {
				tm := manifest.Tools{Version: manifest.ToolsManifestVersion, Tools: a.tools, Policy: a.Policy, Rules: a.rules}
				if err := addJSON(path.Join(dir, "tools.json"), modeSecret, tm); err != nil {
					return nil, err
				}
			}
			feeds := a.Feeds
			if feeds == nil {
				feeds = []manifest.Feed{}
			}
			if err := addJSON(path.Join(dir, "feeds.json"), modeSecret, feeds); err != nil {
				return nil, err
			}
			for _, svc := range sortedKeys(a.serviceAuth) {
				if err := addJSON(path.Join(dir, "service-auth", svc+".json"), modeSecret, a.serviceAuth[svc]); err != nil {
					return nil, err
				}
			}
			if a.HasNative() {
				// The runner's own file, outside the context directory
				// (cllama's), mounted into this agent only; it holds the
				// agent's token.
				data, err := b.mcpConfig(a)
				if err != nil {
					return nil, fmt.Errorf("encoding %s: %w", MCPConfigPath(a.ID), err)
				}
				add(MCPConfigPath(a.ID), modeSecret, data)
			}
		}
		for _, s := range a.Skills {
			add(path.Join(dir, "skills", s+".md"), modePublic, a.skillData[s])
		}
	}
	if err := addJSON(ProvidersFile, modeSecret, providers); err != nil {
		return nil, err
	}
	operator, err := b.operatorToken()
	if err != nil {
		return nil, err
	}
	add(OperatorTokenFile, modeSecret, []byte(operator+"\n"))
	if err := addJSON(PodSettingsFile, modeSecret, b.podSettings()); err != nil {
		return nil, err
	}
	sortFiles(out.Files)
	return out.Files, nil
}

// output is the whole generated tree: the context files and the compose
// file, which holds agent tokens and the services' resolved environment.
func output(files []File, compose []byte) *Output {
	out := &Output{Files: append(slices.Clip(files), File{Path: GeneratedFile, Data: compose, Mode: modeSecret})}
	sortFiles(out.Files)
	return out
}

func sortFiles(files []File) {
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
}

func (b *builder) agentType(a *Agent) string {
	if t := b.pod.Services[a.Service].Claw.Type; t != "" {
		return t
	}
	return "generic"
}

// Write puts the output under dir (the pod directory) at its paths, live
// at once: what Stage followed by Apply amounts to for a pod that is not
// running, in the plain layout (tests and tools read it back). Files whose
// bytes and mode are unchanged are left alone; files under
// .claw-runtime/context and .claw-runtime/runner that the output no
// longer holds (a removed agent, a revoked grant) are deleted. Directories
// are created in place rather than replaced. claw itself stages (see
// Stage).
func (o *Output) Write(dir string) error {
	return writeFiles(dir, o.Files, ContextDir, RunnerDir)
}

// writeFiles writes files under dir, leaving unchanged ones alone, then
// removes what else is under each of pruneRoots (relative to dir).
func writeFiles(dir string, files []File, pruneRoots ...string) error {
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.Path] = true
		full := filepath.Join(dir, filepath.FromSlash(f.Path))
		dmode := fs.FileMode(0o755)
		if strings.Contains(f.Path, "/service-auth/") || strings.HasPrefix(f.Path, AuthDir+"/") || f.Path == StagedProvidersFile ||
			strings.HasPrefix(f.Path, RunnerDir+"/") || strings.HasPrefix(f.Path, StagedRunnerDir+"/") {
			dmode = 0o700
		}
		if err := os.MkdirAll(filepath.Dir(full), dmode); err != nil {
			return err
		}
		if dmode == 0o700 {
			// MkdirAll leaves an existing directory's mode alone.
			if err := os.Chmod(filepath.Dir(full), dmode); err != nil {
				return err
			}
		}
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, f.Data) {
			if st, err := os.Stat(full); err == nil && st.Mode().Perm() == f.Mode {
				if f.Path == GeneratedFile {
					// Its mtime says when the pod was last compiled.
					now := time.Now()
					_ = os.Chtimes(full, now, now)
				}
				continue
			}
		}
		if err := WriteAtomic(full, f.Data, f.Mode); err != nil {
			return err
		}
	}
	for _, root := range pruneRoots {
		if err := prune(dir, root, want); err != nil {
			return err
		}
	}
	return nil
}

// prune removes files under root (relative to dir) not in want, then
// empty directories.
func prune(dir, root string, want map[string]bool) error {
	base := filepath.Join(dir, filepath.FromSlash(root))
	var dirs []string
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p != base {
				dirs = append(dirs, p)
			}
			return nil
		}
		if !want[rel] {
			return os.Remove(p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if entries, err := os.ReadDir(dirs[i]); err == nil && len(entries) == 0 {
			_ = os.Remove(dirs[i])
		}
	}
	return nil
}

// WriteAtomic writes data to full through a temporary file in the same
// directory and a rename (durable.Replace): a reader sees the old file or
// the new one, never a part, and the new one survives a crash once
// WriteAtomic returned.
func WriteAtomic(full string, data []byte, mode fs.FileMode) error {
	return durable.Replace(full, "."+filepath.Base(full)+".tmp", mode, data)
}
