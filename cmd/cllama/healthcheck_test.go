package main

import (
	"io"
	"net"
	"net/http"
	"testing"
)

func TestHealthcheckProbesListenAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	status := http.StatusOK
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	env := []string{"LISTEN_ADDR=:" + port}

	if code := run([]string{"-healthcheck"}, env, io.Discard, io.Discard); code != 0 {
		t.Fatalf("healthy server: exit %d", code)
	}
	status = http.StatusServiceUnavailable
	if code := run([]string{"--healthcheck"}, env, io.Discard, io.Discard); code != 1 {
		t.Fatalf("unhealthy server: exit %d, want 1", code)
	}
	srv.Close()
	if code := run([]string{"-healthcheck"}, env, io.Discard, io.Discard); code != 1 {
		t.Fatalf("nothing listening: exit %d, want 1", code)
	}
}
