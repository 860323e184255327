package mcpstdio

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		EnvCommand:     "npx",
		EnvArgs:        `["-y","perplexity-mcp"]`,
		EnvAddr:        "127.0.0.1:9000",
		EnvPath:        "/x",
		EnvAuthToken:   "tok",
		EnvCallTimeout: "15s",
		EnvMaxBody:     "2048",
	}
	cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Command != "npx" || !slices.Equal(cfg.Args, []string{"-y", "perplexity-mcp"}) || cfg.Addr != "127.0.0.1:9000" ||
		cfg.Path != "/x" || cfg.AuthToken != "tok" || cfg.CallTimeout != 15*time.Second || cfg.MaxBodyBytes != 2048 {
		t.Fatalf("cfg = %+v", cfg)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"args not an array": {map[string]string{EnvArgs: `"-y"`}, EnvArgs},
		"args not strings":  {map[string]string{EnvArgs: `[1,2]`}, EnvArgs},
		"bad timeout":       {map[string]string{EnvCallTimeout: "soon"}, EnvCallTimeout},
		"bad body size":     {map[string]string{EnvMaxBody: "-1"}, EnvMaxBody},
	} {
		_, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want mention of %s", name, err, tc.want)
		}
	}
	for name, cfg := range map[string]Config{
		"no command":    {},
		"relative path": {Command: "x", Path: "mcp"},
		"health path":   {Command: "x", Path: "/healthz"},
	} {
		if _, err := New(cfg, nil); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestDefaults(t *testing.T) {
	w, err := New(Config{Command: "x"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c := w.Config()
	if c.Addr != ":8080" || c.Path != "/mcp" || c.MaxBodyBytes != 4<<20 || c.CallTimeout != time.Minute || c.BackoffMax != 10*time.Second {
		t.Fatalf("defaults = %+v", c)
	}
}
