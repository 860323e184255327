package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheckEngine(t *testing.T) {
	ctx := context.Background()
	ok := fakeDockerd(t, nil)
	if err := checkEngine(ctx, engineEndpoint{Host: ok, Source: "DOCKER_HOST"}); err != nil {
		t.Fatalf("answering engine: %v", err)
	}
	dir, err := os.MkdirTemp("", "eng")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A socket nobody listens on any more.
	dead := filepath.Join(dir, "dead.sock")
	ln, err := net.Listen("unix", dead)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A TCP listener that accepts and never answers.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := refused.Addr().String()
	refused.Close()
	broken := httpEngine(t, http.StatusInternalServerError)
	engineCheckTimeout = 300 * time.Millisecond
	t.Cleanup(func() { engineCheckTimeout = 3 * time.Second })
	for _, tc := range []struct {
		host, want string
	}{
		{"unix:///nonexistent", "cannot reach the Docker engine at unix:///nonexistent (DOCKER_HOST): no such socket: is the Docker daemon running, and is DOCKER_HOST right?"},
		{"unix://" + dead, "connection refused: the socket exists but no daemon listens on it; start the Docker daemon"},
		{"unix://" + file, file + " is not a socket"},
		{"tcp://" + refusedAddr, "connection refused: is the Docker daemon running and listening there"},
		{"tcp://" + mute.Addr().String(), "no answer within 300ms"},
		{"tcp://" + broken, "GET /_ping answered 500 Internal Server Error"},
		{"tcp://", `DOCKER_HOST="tcp://": no host:port`},
	} {
		err := checkEngine(ctx, engineEndpoint{Host: tc.host, Source: "DOCKER_HOST"})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q in one line", tc.host, err, tc.want)
		}
	}
	if os.Geteuid() != 0 {
		locked := filepath.Join(dir, "locked")
		if err := os.Mkdir(locked, 0o700); err != nil {
			t.Fatal(err)
		}
		l2, err := net.Listen("unix", filepath.Join(locked, "s"))
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Close()
		if err := os.Chmod(locked, 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(locked, 0o700)
		if err := checkEngine(ctx, engineEndpoint{Host: "unix://" + filepath.Join(locked, "s"), Source: "the default socket"}); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("unopenable socket: %v", err)
		}
	}
}

// httpEngine is a TCP engine answering /_ping with status; it returns
// host:port.
func httpEngine(t *testing.T, status int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func TestResolveEngine(t *testing.T) {
	cfg := t.TempDir()
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	ep, ok := resolveEngine(env(map[string]string{"DOCKER_HOST": "tcp://h:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CONFIG": cfg}))
	if !ok || ep.Host != "tcp://h:2376" || ep.Source != "DOCKER_HOST" || !ep.TLS {
		t.Errorf("DOCKER_HOST: %+v %v", ep, ok)
	}
	if _, ok := resolveEngine(env(map[string]string{"DOCKER_HOST": "ssh://me@h"})); ok {
		t.Error("ssh:// is not checked (compose speaks for itself)")
	}
	ep, ok = resolveEngine(env(map[string]string{"DOCKER_CONFIG": cfg}))
	if !ok || ep.Host != defaultDockerHost || ep.Source != "the default socket" {
		t.Errorf("default: %+v %v", ep, ok)
	}
	// The current context's endpoint, as the docker CLI stores it.
	sum := sha256.Sum256([]byte("remote"))
	meta := filepath.Join(cfg, "contexts", "meta", hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(meta, "meta.json"), []byte(`{"Name":"remote","Endpoints":{"docker":{"Host":"unix:///run/user/1000/docker.sock"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"currentContext":"remote"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ep, ok = resolveEngine(env(map[string]string{"DOCKER_CONFIG": cfg}))
	if !ok || ep.Host != "unix:///run/user/1000/docker.sock" || ep.Source != `docker context "remote"` {
		t.Errorf("context: %+v %v", ep, ok)
	}
	ep, ok = resolveEngine(env(map[string]string{"DOCKER_CONFIG": cfg, "DOCKER_CONTEXT": "default"}))
	if !ok || ep.Host != defaultDockerHost {
		t.Errorf("DOCKER_CONTEXT=default: %+v %v", ep, ok)
	}
	if _, ok := resolveEngine(env(map[string]string{"DOCKER_CONFIG": cfg, "DOCKER_CONTEXT": "unknown"})); ok {
		t.Error("an unreadable context is not checked")
	}
}
