package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Container is one container of the pod as the engine reports it.
type Container struct {
	// Service is the compose service (an agent replica is a service of
	// its own); Name the container name.
	Service string `json:"service"`
	Name    string `json:"name"`
	ID      string `json:"id"`
	// State is the engine's: created, running, restarting, paused,
	// exited, dead.
	State string `json:"state"`
	// Health is healthy, unhealthy or starting; empty without a health
	// check.
	Health   string `json:"health,omitempty"`
	ExitCode int    `json:"exit_code"`
	Ports    []Port `json:"ports"`
	// HealthLog is the output of the last health probe (for messages).
	HealthLog string `json:"-"`
}

// Port is a container port and where the host publishes it.
type Port struct {
	// Target is "<port>/<protocol>" in the container.
	Target string `json:"target"`
	// Published is "<host ip>:<port>" on the host; empty when the port
	// is not published.
	Published string `json:"published,omitempty"`
}

// inspectDoc is the part of `docker inspect` claw reads.
type inspectDoc struct {
	ID     string `json:"Id"`
	Name   string `json:"Name"`
	Config struct {
		Labels map[string]string `json:"Labels"`
	} `json:"Config"`
	State struct {
		Status   string `json:"Status"`
		ExitCode int    `json:"ExitCode"`
		Health   *struct {
			Status string `json:"Status"`
			Log    []struct {
				Output string `json:"Output"`
			} `json:"Log"`
		} `json:"Health"`
	} `json:"State"`
	NetworkSettings struct {
		Ports map[string][]struct {
			HostIP   string `json:"HostIp"`
			HostPort string `json:"HostPort"`
		} `json:"Ports"`
	} `json:"NetworkSettings"`
}

const (
	projectLabel = "com.docker.compose.project"
	serviceLabel = "com.docker.compose.service"
	oneoffLabel  = "com.docker.compose.oneoff"
)

// dockerCLI is the docker command claw asks about containers.
func dockerCLI() (string, error) {
	bin, err := exec.LookPath("docker")
	if err != nil {
		return "", errors.New("reading the pod's containers needs the docker CLI (docker inspect); install it, or use `claw ps` without --json")
	}
	return bin, nil
}

// Containers lists the pod's containers (not those of `compose run`),
// sorted by service and name, from `docker ps` and `docker inspect`.
func (e *composeEngine) Containers(ctx context.Context) ([]Container, error) {
	bin, err := dockerCLI()
	if err != nil {
		return nil, err
	}
	out, err := dockerOutput(ctx, bin, "ps", "-a", "-q", "--no-trunc",
		"--filter", "label="+projectLabel+"="+e.cfg.Project, "--filter", "label="+oneoffLabel+"=False")
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return nil, nil
	}
	out, err = dockerOutput(ctx, bin, append([]string{"inspect"}, ids...)...)
	if err != nil {
		return nil, err
	}
	return parseInspect(out)
}

func dockerOutput(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("docker %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// parseInspect reads `docker inspect` output.
func parseInspect(data []byte) ([]Container, error) {
	var docs []inspectDoc
	if err := json.Unmarshal(data, &docs); err != nil {
		return nil, fmt.Errorf("docker inspect: %w", err)
	}
	out := make([]Container, 0, len(docs))
	for _, d := range docs {
		c := Container{
			Service:  d.Config.Labels[serviceLabel],
			Name:     strings.TrimPrefix(d.Name, "/"),
			ID:       d.ID[:min(len(d.ID), 12)],
			State:    d.State.Status,
			ExitCode: d.State.ExitCode,
			Ports:    []Port{},
		}
		if h := d.State.Health; h != nil {
			c.Health = h.Status
			if n := len(h.Log); n > 0 {
				c.HealthLog = strings.TrimSpace(h.Log[n-1].Output)
			}
		}
		for target, binds := range d.NetworkSettings.Ports {
			if len(binds) == 0 {
				c.Ports = append(c.Ports, Port{Target: target})
			}
			for _, b := range binds {
				c.Ports = append(c.Ports, Port{Target: target, Published: hostPort(b.HostIP, b.HostPort)})
			}
		}
		sort.Slice(c.Ports, func(i, j int) bool {
			if c.Ports[i].Target != c.Ports[j].Target {
				return c.Ports[i].Target < c.Ports[j].Target
			}
			return c.Ports[i].Published < c.Ports[j].Published
		})
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Service != out[j].Service {
			return out[i].Service < out[j].Service
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func hostPort(ip, port string) string {
	if ip == "" {
		ip = "0.0.0.0"
	}
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + port
	}
	return ip + ":" + port
}

// generatedServices lists the services of the pod's compose.generated.yml
// (agent replicas and cllama included), sorted.
func generatedServices(dir, file string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Services map[string]yaml.Node `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	names := make([]string, 0, len(doc.Services))
	for n := range doc.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}
