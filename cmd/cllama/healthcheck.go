package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// healthcheckFlag makes cllama probe a running cllama instead of serving:
// the compiled pod's health check runs `/cllama -healthcheck` inside the
// container, where no shell or curl exists (the image is FROM scratch).
const healthcheckFlag = "-healthcheck"

func isHealthcheck(args []string) bool {
	return len(args) == 1 && (args[0] == healthcheckFlag || args[0] == "-"+healthcheckFlag)
}

// healthcheck GETs /health on the address cllama listens on (LISTEN_ADDR,
// default :8080) over loopback and returns 0 when it answers 200.
func healthcheck(environ []string, stderr io.Writer) int {
	addr := ":8080"
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "LISTEN_ADDR="); ok && v != "" {
			addr = v
		}
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(stderr, "cllama: healthcheck: LISTEN_ADDR %q: %v\n", addr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort("127.0.0.1", port)+"/health", nil)
	if err != nil {
		fmt.Fprintf(stderr, "cllama: healthcheck: %v\n", err)
		return 1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "cllama: healthcheck: %v\n", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "cllama: healthcheck: /health answered %d\n", resp.StatusCode)
		return 1
	}
	return 0
}
