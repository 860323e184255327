package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMStopsWrapperAndChild runs the real binaries: the wrapper must
// exit 0 on SIGTERM and leave no child behind.
func TestSIGTERMStopsWrapperAndChild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, b := range []string{"claw-mcp-stdio", "claw-mcp-echo"} {
		build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, b), "github.com/clawdapus/clawgo/cmd/"+b)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b, err, out)
		}
	}
	addr := freeAddr(t)
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "claw-mcp-stdio"), "-addr", addr, "--", filepath.Join(dir, "claw-mcp-echo"))
	cmd.Env = append(os.Environ(), "CLAW_MCP_STDIO_AUTH_TOKEN=t0ken")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(&b, sc.Text())
		}
		logs <- b.String()
	}()

	var h struct {
		Status string
		PID    int
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if h.Status == "up" {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h.Status != "up" || h.PID == 0 {
		cmd.Process.Kill()
		t.Fatalf("wrapper never healthy: %+v\n%s", h, <-logs)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitErr := cmd.Wait()
	out := <-logs
	if waitErr != nil {
		t.Fatalf("wrapper exit: %v\n%s", waitErr, out)
	}
	if syscall.Kill(h.PID, 0) == nil {
		t.Fatalf("child %d survived the wrapper\n%s", h.PID, out)
	}
	for _, want := range []string{"child stderr: claw-mcp-echo: serving", "exited with status 0", "msg=stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
