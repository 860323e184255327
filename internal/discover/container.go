package discover

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ContainerLabel marks discovery containers (value: the service), so a
// leftover one is easy to find: docker ps --filter label=io.clawdapus.discover.
const ContainerLabel = "io.clawdapus.discover"

var nameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// startContainer runs the service's image (whose entrypoint is the
// wrapper) with the service's environment, volumes, user and working
// directory, publishing the wrapper's port on a random loopback port.
// Values reach docker through its environment (`-e NAME`), not its
// command line, so credentials do not show in process lists.
func startContainer(ctx context.Context, t Target, o Options, logs *tail) (*running, error) {
	if t.Image == "" {
		return nil, fmt.Errorf("service %q has no image; build and tag it (image: …), or use --local", t.Service)
	}
	docker := o.Docker
	if docker == "" {
		docker = "docker"
	}
	if _, err := exec.LookPath(docker); err != nil {
		return nil, fmt.Errorf("docker is not installed (%v); install Docker or use --local", err)
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	name := "claw-discover-" + nameUnsafe.ReplaceAllString(t.Service, "_") + "-" + hex.EncodeToString(suffix[:])
	args, env := dockerRunArgs(t, o, name)

	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cmd := exec.CommandContext(lctx, docker, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.WaitDelay = stopTimeout
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("docker run: %w", err)
	}
	r := &running{exited: make(chan struct{})}
	go func() {
		r.exitErr = cmd.Wait()
		close(r.exited)
	}()
	r.stop = func() error {
		// A fresh context: cleanup must run after cancellation too.
		sctx, scancel := context.WithTimeout(context.Background(), stopTimeout)
		defer scancel()
		var out bytes.Buffer
		rm := exec.CommandContext(sctx, docker, "rm", "-f", name)
		rm.Stdout, rm.Stderr = &out, &out
		rmErr := rm.Run()
		select {
		case <-r.exited:
		case <-sctx.Done():
		}
		cancel()
		<-r.exited
		if rmErr != nil && !strings.Contains(out.String(), "No such container") {
			return fmt.Errorf("docker rm -f %s: %v: %s", name, rmErr, strings.TrimSpace(out.String()))
		}
		return nil
	}
	port := t.Port + "/tcp"
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := exec.CommandContext(ctx, docker, "port", name, port).Output()
		if err == nil {
			if hp := publishedAddr(string(out)); hp != "" {
				r.base = "http://" + hp
				return r, nil
			}
		}
		select {
		case <-r.exited:
			_ = r.stop()
			if strings.Contains(logs.String(), "No such image") || strings.Contains(logs.String(), "Unable to find image") {
				return nil, fmt.Errorf("image %s is not present locally: build it (for example scripts/images.sh or docker compose build) or pass --pull missing", t.Image)
			}
			return nil, fmt.Errorf("docker run %s exited: %v", t.Image, r.exitErr)
		case <-ctx.Done():
			_ = r.stop()
			return nil, fmt.Errorf("waiting for container %s to publish port %s: %w", name, port, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// dockerRunArgs builds `docker run …` for t and the environment entries
// (NAME=value) docker must be given for its `-e NAME` flags.
func dockerRunArgs(t Target, o Options, name string) (args, env []string) {
	args = []string{"run", "--rm", "--name", name, "--label", ContainerLabel + "=" + t.Service,
		"-p", "127.0.0.1::" + t.Port}
	pull := o.Pull
	if pull == "" {
		pull = "never"
	}
	args = append(args, "--pull", pull)
	wenv := t.wrapperEnv(":" + t.Port)
	keys := make([]string, 0, len(wenv))
	for k := range wenv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if passByValue(k) {
			// Names docker itself depends on are given inline rather
			// than by overriding docker's own environment.
			args = append(args, "-e", k+"="+wenv[k])
			continue
		}
		args = append(args, "-e", k)
		env = append(env, k+"="+wenv[k])
	}
	for _, m := range t.Volumes {
		switch m.Type {
		case "tmpfs":
			args = append(args, "--tmpfs", m.Target)
		case "bind", "volume", "":
			if m.Source == "" {
				args = append(args, "-v", m.Target)
				continue
			}
			v := m.Source + ":" + m.Target
			if m.ReadOnly {
				v += ":ro"
			}
			args = append(args, "-v", v)
		}
	}
	if t.User != "" {
		args = append(args, "--user", t.User)
	}
	if t.WorkingDir != "" {
		args = append(args, "--workdir", t.WorkingDir)
	}
	rest := append([]string{}, t.Cmd...)
	if len(t.Entrypoint) > 0 {
		args = append(args, "--entrypoint", t.Entrypoint[0])
		rest = append(append([]string{}, t.Entrypoint[1:]...), rest...)
	}
	args = append(args, t.Image)
	return append(args, rest...), env
}

func passByValue(k string) bool {
	switch k {
	case "PATH", "HOME", "TMPDIR", "TMP", "TEMP":
		return true
	}
	return strings.HasPrefix(k, "DOCKER_")
}

// publishedAddr picks the IPv4 loopback mapping from `docker port` output
// ("127.0.0.1:49153", possibly several lines).
func publishedAddr(out string) string {
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		line = strings.TrimSpace(line)
		host, port, err := net.SplitHostPort(line)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
			continue
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(host, port)
	}
	return ""
}
