package main

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/mcpstdio"
)

func TestParseFlagsOverrideEnv(t *testing.T) {
	env := map[string]string{
		mcpstdio.EnvCommand: "from-env",
		mcpstdio.EnvArgs:    `["a"]`,
		mcpstdio.EnvAddr:    ":9000",
	}
	getenv := func(k string) string { return env[k] }

	cfg, err := parse(nil, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Command != "from-env" || !slices.Equal(cfg.Args, []string{"a"}) || cfg.Addr != ":9000" {
		t.Fatalf("env only: %+v", cfg)
	}

	cfg, err = parse([]string{"-addr", "127.0.0.1:1", "-args", `["b","c"]`, "-call-timeout", "2s"}, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Command != "from-env" || !slices.Equal(cfg.Args, []string{"b", "c"}) || cfg.Addr != "127.0.0.1:1" || cfg.CallTimeout != 2*time.Second {
		t.Fatalf("flags: %+v", cfg)
	}

	cfg, err = parse([]string{"--", "npx", "-y", "server"}, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Command != "npx" || !slices.Equal(cfg.Args, []string{"-y", "server"}) {
		t.Fatalf("trailing command: %+v", cfg)
	}
}

func TestMainRejectsBadConfig(t *testing.T) {
	none := func(string) string { return "" }
	if code := Main(nil, none, io.Discard); code != 2 {
		t.Errorf("no command: exit %d, want 2", code)
	}
	if code := Main([]string{"-args", "not json", "x"}, none, io.Discard); code != 2 {
		t.Errorf("bad args: exit %d, want 2", code)
	}
}

// -version prints one line naming the program and exits 0, with no
// command configured.
func TestMainVersion(t *testing.T) {
	var out strings.Builder
	stdout = &out
	t.Cleanup(func() { stdout = os.Stdout })
	none := func(string) string { return "" }
	for _, arg := range []string{"-version", "--version"} {
		out.Reset()
		if code := Main([]string{arg}, none, io.Discard); code != 0 || !strings.HasPrefix(out.String(), "claw-mcp-stdio ") || !strings.Contains(out.String(), "go1") {
			t.Errorf("%s: exit %d, %q", arg, code, out.String())
		}
	}
}
