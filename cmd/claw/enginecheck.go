package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Before running compose, claw asks the Docker engine compose will use
// whether it is there (GET /_ping). Without this an unreachable engine
// surfaces as compose's own failure: a Python traceback of a hundred
// lines from docker-compose 1.29. The check costs one local round trip.

// engineEndpoint is where compose will reach the Docker engine.
type engineEndpoint struct {
	// Host is the engine address as configured (unix:///var/run/docker.sock,
	// tcp://host:2375, ...).
	Host string
	// Source says where Host came from, for the message.
	Source string
	// TLS means the endpoint expects TLS: the check only connects.
	TLS bool
}

// defaultDockerHost is the engine's socket when nothing names another.
const defaultDockerHost = "unix:///var/run/docker.sock"

// engineCheckTimeout bounds the check (a variable for tests).
var engineCheckTimeout = 3 * time.Second

// resolveEngine finds the endpoint the docker CLI and compose would use:
// DOCKER_HOST, else the current docker context (DOCKER_CONTEXT or the CLI
// configuration's currentContext), else the default socket. ok is false
// when the endpoint cannot be checked cheaply (ssh://, a context claw
// cannot read): compose is then left to speak for itself.
func resolveEngine(getenv func(string) string) (ep engineEndpoint, ok bool) {
	tlsEnv := getenv("DOCKER_TLS_VERIFY") != "" || getenv("DOCKER_TLS") != ""
	if h := getenv("DOCKER_HOST"); h != "" {
		return engineEndpoint{Host: h, Source: "DOCKER_HOST", TLS: tlsEnv}, checkable(h)
	}
	name := getenv("DOCKER_CONTEXT")
	cfgDir := getenv("DOCKER_CONFIG")
	if cfgDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return engineEndpoint{Host: defaultDockerHost, Source: "the default socket"}, true
		}
		cfgDir = filepath.Join(home, ".docker")
	}
	if name == "" {
		var cfg struct {
			CurrentContext string `json:"currentContext"`
		}
		if data, err := os.ReadFile(filepath.Join(cfgDir, "config.json")); err == nil {
			_ = json.Unmarshal(data, &cfg)
		}
		name = cfg.CurrentContext
	}
	if name == "" || name == "default" {
		return engineEndpoint{Host: defaultDockerHost, Source: "the default socket", TLS: tlsEnv}, true
	}
	// The CLI stores a context's endpoint under the SHA-256 of its name.
	sum := sha256.Sum256([]byte(name))
	data, err := os.ReadFile(filepath.Join(cfgDir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json"))
	if err != nil {
		return engineEndpoint{}, false
	}
	var meta struct {
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	if json.Unmarshal(data, &meta) != nil || meta.Endpoints["docker"].Host == "" {
		return engineEndpoint{}, false
	}
	h := meta.Endpoints["docker"].Host
	// A context's TLS material lives beside its metadata; connecting is
	// the check.
	return engineEndpoint{Host: h, Source: fmt.Sprintf("docker context %q", name), TLS: strings.HasPrefix(h, "tcp://")}, checkable(h)
}

func checkable(host string) bool {
	return strings.HasPrefix(host, "unix://") || strings.HasPrefix(host, "tcp://") || strings.HasPrefix(host, "http://")
}

// checkEngine pings the engine at ep and says in one sentence what is
// wrong when it does not answer.
func checkEngine(ctx context.Context, ep engineEndpoint) error {
	ctx, cancel := context.WithTimeout(ctx, engineCheckTimeout)
	defer cancel()
	network, addr, err := dialTarget(ep.Host)
	if err != nil {
		return fmt.Errorf("DOCKER_HOST=%q: %v; set it to unix:///path/to/docker.sock or tcp://host:port", ep.Host, err)
	}
	err = ping(ctx, network, addr, ep.TLS)
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("the Docker engine at %s (%s)", ep.Host, ep.Source)
	var hint string
	switch {
	case errors.Is(err, syscall.ENOENT):
		hint = "no such socket: is the Docker daemon running"
		if ep.Source == "DOCKER_HOST" {
			hint += ", and is DOCKER_HOST right"
		}
		hint += "?"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		hint = "permission denied on the socket: add your user to the docker group (and log in again), or use a DOCKER_HOST you may open"
	case errors.Is(err, syscall.ECONNREFUSED):
		if fi, serr := os.Stat(addr); network == "unix" && serr == nil && fi.Mode()&os.ModeSocket == 0 {
			hint = addr + " is not a socket: is DOCKER_HOST right?"
		} else if network == "unix" {
			hint = "connection refused: the socket exists but no daemon listens on it; start the Docker daemon"
		} else {
			hint = "connection refused: is the Docker daemon running and listening there, and is the address right?"
		}
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		hint = fmt.Sprintf("no answer within %s: is the Docker daemon running, and is the address right?", engineCheckTimeout)
	default:
		hint = fmt.Sprintf("%v: is the Docker daemon running, and is the address right?", err)
	}
	return fmt.Errorf("cannot reach %s: %s", where, hint)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dialTarget turns a Docker host into a network and address to dial.
func dialTarget(host string) (network, addr string, err error) {
	u, err := url.Parse(host)
	if err != nil {
		return "", "", err
	}
	switch u.Scheme {
	case "unix":
		p := u.Path
		if p == "" {
			p = u.Opaque
		}
		if p == "" {
			return "", "", errors.New("no socket path")
		}
		return "unix", p, nil
	case "tcp", "http":
		if u.Host == "" {
			return "", "", errors.New("no host:port")
		}
		return "tcp", u.Host, nil
	}
	return "", "", fmt.Errorf("unsupported scheme %q", u.Scheme)
}

// pingAnswer bounds what is read of the engine's answer.
const pingAnswer = 1 << 10

// ping connects to the engine and, unless it expects TLS, asks GET /_ping.
func ping(ctx context.Context, network, addr string, tlsOnly bool) error {
	var d net.Dialer
	if tlsOnly {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return err
		}
		return conn.Close()
	}
	tr := &http.Transport{
		DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, network, addr) },
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/_ping", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, pingAnswer))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /_ping answered %s", resp.Status)
	}
	return nil
}
