package proxy

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire/formats"
)

func TestLoadConfigDefaults(t *testing.T) {
	c, err := LoadConfig(nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.ListenAddr != ":8080" || c.ContextRoot != "/claw/context" || c.AuthDir != "/claw/auth" || c.HistoryDir != "" ||
		c.MaxBodyBytes != 32<<20 || c.FirstByteTimeout != DefaultFirstByteTimeout || c.HistoryFsync != "1s" || c.StoredIDsMax != 100_000 {
		t.Fatalf("%+v", c)
	}
}

func TestLoadConfigEnvAndFlags(t *testing.T) {
	env := []string{
		"LISTEN_ADDR=:9999", "CLAW_CONTEXT_ROOT=/ctx", "CLAW_AUTH_DIR=/auth", "CLAW_SESSION_HISTORY_DIR=/hist", "CLAW_POD=desk",
		"CLLAMA_MAX_BODY_BYTES=1000", "CLLAMA_STREAM_IDLE_TIMEOUT=5s", "CLLAMA_HISTORY_FSYNC=always",
		"CLLAMA_CONTINUITY_MAX_BYTES=5000000", "CLLAMA_CONTINUITY_MAX_ENTRY_BYTES=1000",
		"OPENAI_API_KEY=sk-o", "ANTHROPIC_BASE_URL=http://mock:1/v1", "PATH=/bin",
	}
	c, err := LoadConfig([]string{"-listen", ":7000", "-first-byte-timeout", "3s", "-continuity-max-entry-bytes", "2000"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.ListenAddr != ":7000" || c.ContextRoot != "/ctx" || c.AuthDir != "/auth" || c.HistoryDir != "/hist" || c.Pod != "desk" ||
		c.MaxBodyBytes != 1000 || c.StreamIdleTimeout != 5*time.Second || c.FirstByteTimeout != 3*time.Second || c.HistoryFsync != "always" ||
		c.ContinuityMaxBytes != 5000000 || c.ContinuityMaxEntryBytes != 2000 {
		t.Fatalf("%+v", c)
	}
	if c.ProviderEnv["openai"].APIKey != "sk-o" || c.ProviderEnv["anthropic"].BaseURL != "http://mock:1/v1" {
		t.Fatalf("%+v", c.ProviderEnv)
	}
}

// The bounds every route shares: their defaults, and each read from the
// environment.
func TestLoadConfigAdmissionBounds(t *testing.T) {
	c, err := LoadConfig(nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.ReadHeaderTimeout != 10*time.Second || c.IdleTimeout != 2*time.Minute {
		t.Fatalf("connection timeouts %s, %s", c.ReadHeaderTimeout, c.IdleTimeout)
	}
	if d := c.withDefaults(); d.MaxInflightBytes != 256<<20 || d.MaxAgentInflightBytes != 64<<20 || d.MCPMaxBodyBytes != 4<<20 {
		t.Fatalf("budget %d, per agent %d, MCP body %d", d.MaxInflightBytes, d.MaxAgentInflightBytes, d.MCPMaxBodyBytes)
	}
	if d := (Config{MaxBodyBytes: 1 << 20}).withDefaults(); d.MaxAgentInflightBytes != 2<<20 || d.MCPMaxBodyBytes != 1<<20 {
		t.Fatalf("with a 1 MiB body limit: per agent %d, MCP body %d", d.MaxAgentInflightBytes, d.MCPMaxBodyBytes)
	}
	c, err = LoadConfig(nil, []string{"CLLAMA_MAX_INFLIGHT_BYTES_PER_AGENT=100000000", "CLLAMA_MCP_MAX_BODY_BYTES=65536",
		"CLLAMA_READ_HEADER_TIMEOUT=3s", "CLLAMA_IDLE_TIMEOUT=1m"}, io.Discard)
	if err != nil || c.MaxAgentInflightBytes != 100000000 || c.MCPMaxBodyBytes != 65536 || c.ReadHeaderTimeout != 3*time.Second || c.IdleTimeout != time.Minute {
		t.Fatalf("%v %+v", err, c)
	}
}

func TestLoadConfigStoredIDsMax(t *testing.T) {
	c, err := LoadConfig(nil, []string{"CLLAMA_STORED_IDS_MAX=500"}, io.Discard)
	if err != nil || c.StoredIDsMax != 500 {
		t.Fatalf("env: %v %d", err, c.StoredIDsMax)
	}
	c, err = LoadConfig([]string{"-stored-ids-max", "700"}, []string{"CLLAMA_STORED_IDS_MAX=500"}, io.Discard)
	if err != nil || c.StoredIDsMax != 700 {
		t.Fatalf("flag: %v %d", err, c.StoredIDsMax)
	}
}

// CLLAMA_UPSTREAM_CLIENT=net/http sends every upstream call through
// net/http: the cleartext client's fallback takes them all.
func TestUpstreamClientSwitch(t *testing.T) {
	for env, disabled := range map[string]bool{"": false, "CLLAMA_UPSTREAM_CLIENT=h1": false, "CLLAMA_UPSTREAM_CLIENT=net/http": true} {
		c, err := LoadConfig(nil, []string{env}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := NewTransport(c.UpstreamClient).Disabled; got != disabled {
			t.Errorf("%q: h1 disabled %v, want %v", env, got, disabled)
		}
	}
}

// An agent's history is spread over one file per four cores unless
// configured.
func TestHistoryFiles(t *testing.T) {
	c, err := LoadConfig(nil, []string{"CLLAMA_HISTORY_FILES=3"}, io.Discard)
	if err != nil || c.HistoryFilesOrAuto() != 3 {
		t.Fatalf("files %d: %v", c.HistoryFilesOrAuto(), err)
	}
	c, err = LoadConfig([]string{"-history-files", "0"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for procs, want := range map[int]int{1: 1, 2: 1, 7: 1, 8: 2, 16: 4, 64: 8} {
		old := runtime.GOMAXPROCS(procs)
		got := c.HistoryFilesOrAuto()
		runtime.GOMAXPROCS(old)
		if got != want {
			t.Errorf("GOMAXPROCS %d: %d files, want %d", procs, got, want)
		}
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{nil, []string{"CLLAMA_MAX_BODY_BYTES=lots"}, "CLLAMA_MAX_BODY_BYTES"},
		{nil, []string{"CLLAMA_FIRST_BYTE_TIMEOUT=5"}, "CLLAMA_FIRST_BYTE_TIMEOUT"},
		{nil, []string{"CLLAMA_CONTINUITY_MAX_BYTES=64MiB"}, "CLLAMA_CONTINUITY_MAX_BYTES"},
		{nil, []string{"CLLAMA_CONTINUITY_MAX_ENTRY_BYTES=0"}, "CLLAMA_CONTINUITY_MAX_ENTRY_BYTES"},
		{[]string{"stray"}, nil, "unexpected arguments"},
		{[]string{"-max-body-bytes", "0"}, nil, "must be > 0"},
		{nil, []string{"CLLAMA_HISTORY_FSYNC=sometimes"}, "CLLAMA_HISTORY_FSYNC"},
		{[]string{"-history-fsync", "0s"}, nil, "-history-fsync"},
		{nil, []string{"CLLAMA_HISTORY_FILES=0"}, "CLLAMA_HISTORY_FILES"},
		{nil, []string{"CLLAMA_HISTORY_FILES=65"}, "CLLAMA_HISTORY_FILES"},
		{[]string{"-history-files", "-1"}, nil, "-history-files"},
		{nil, []string{"CLLAMA_STORED_IDS_MAX=1e5"}, "CLLAMA_STORED_IDS_MAX"},
		{nil, []string{"CLLAMA_STORED_IDS_MAX=0"}, "CLLAMA_STORED_IDS_MAX"},
		{[]string{"-stored-ids-max", "-1"}, nil, "-stored-ids-max"},
		{nil, []string{"CLLAMA_UPSTREAM_CLIENT=curl"}, `use "h1" (the default) or "net/http"`},
		{nil, []string{"CLLAMA_MAX_INFLIGHT_BYTES_PER_AGENT=1000"}, "less than CLLAMA_MAX_BODY_BYTES"},
		{nil, []string{"CLLAMA_MAX_BODY_BYTES=1000", "CLLAMA_MAX_INFLIGHT_BYTES=4000", "CLLAMA_MAX_INFLIGHT_BYTES_PER_AGENT=5000"}, "more than the in-flight budget"},
		{nil, []string{"CLLAMA_MAX_BODY_BYTES=1000", "CLLAMA_MCP_MAX_BODY_BYTES=2000"}, "CLLAMA_MCP_MAX_BODY_BYTES"},
		{nil, []string{"CLLAMA_READ_HEADER_TIMEOUT=10"}, "CLLAMA_READ_HEADER_TIMEOUT"},
		{[]string{"-idle-timeout", "0s"}, nil, "timeouts must be > 0"},
	} {
		if _, err := LoadConfig(tc.args, tc.env, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: err %v, want %q", tc.args, tc.env, err, tc.want)
		}
	}
}

func TestBuildRegistry(t *testing.T) {
	ps, err := manifest.ParseProviders([]byte(`{"version":2,"providers":{
		"anthropic":{"keys":[{"id":"old","secret":"k-old","state":"retired"},{"id":"new","secret":"k-new"}],"active_key_id":"new"},
		"local":{"base_url":"http://llm:8000/v1/","auth":"none"},
		"openrouter":{"base_url":"https://file.example/v1","api_key":"k-or"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]ProviderEnv{
		"openai":     {APIKey: "sk-env"},
		"openrouter": {APIKey: "k-env", BaseURL: "http://override:1/v1"},
		"gemini":     {}, // nothing set: not a provider
		"trading":    {APIKey: "unrelated"},
	}
	reg, err := buildRegistry(ps, env, formats.All(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Route{
		"anthropic":  {Name: "anthropic", BaseURL: "https://api.anthropic.com/v1", Auth: "x-api-key", Secret: "k-new"},
		"local":      {Name: "local", BaseURL: "http://llm:8000/v1", Auth: "none"},
		"openrouter": {Name: "openrouter", BaseURL: "http://override:1/v1", Auth: "bearer", Secret: "k-or"},
		"openai":     {Name: "openai", BaseURL: "https://api.openai.com/v1", Auth: "bearer", Secret: "sk-env"},
	}
	if len(reg.routes) != len(want) {
		t.Fatalf("routes %v", reg.names)
	}
	for n, w := range want {
		if got := reg.routes[n]; got == nil || got.Name != w.Name || got.BaseURL != w.BaseURL || got.Auth != w.Auth || got.Secret != w.Secret {
			t.Errorf("%s = %+v, want %+v", n, got, w)
		}
	}
	if reg.names != "anthropic, local, openai, openrouter" {
		t.Error(reg.names)
	}
	if reg.routes["local"].URL("/chat/completions") != "http://llm:8000/v1/chat/completions" {
		t.Error(reg.routes["local"].URL("/chat/completions"))
	}
}

func TestBuildRegistryUnknownWithoutBaseURL(t *testing.T) {
	ps, _ := manifest.ParseProviders([]byte(`{"providers":{"mystery":{"api_key":"k"}}}`))
	_, err := buildRegistry(ps, nil, formats.All(), nil, "")
	if err == nil || !strings.Contains(err.Error(), "providers.mystery.base_url") || !strings.Contains(err.Error(), "MYSTERY_BASE_URL") {
		t.Fatal(err)
	}
}

func TestProvidersReloadOnChange(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "providers.json")
	writeFile(t, path, `{"providers":{"a":{"base_url":"http://a/v1","api_key":"k1"}}}`)
	var reported []error
	s, err := newProviderSource(dir, nil, formats.All(), nil, func(err error) { reported = append(reported, err) })
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	writeFile(t, path, `{"providers":{"a":{"base_url":"http://a/v1","api_key":"k2-rotated"}}}`)
	_ = os.Chtimes(path, now.Add(time.Hour), now.Add(time.Hour))
	if got := s.get(now.Add(2 * time.Second)).routes["a"].Secret; got != "k2-rotated" {
		t.Fatalf("secret %q after rotation", got)
	}
	writeFile(t, path, `{"providers":`)
	_ = os.Chtimes(path, now.Add(2*time.Hour), now.Add(2*time.Hour))
	if got := s.get(now.Add(4 * time.Second)).routes["a"].Secret; got != "k2-rotated" || len(reported) != 1 {
		t.Fatalf("broken reload: secret %q, reported %v", got, reported)
	}
}

func TestNewFailsOnBadProviders(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "providers.json"), `{"providers":{"x":{"base_url":"ftp://x","api_key":"k"}}}`)
	_, err := New(Config{AuthDir: dir, ContextRoot: dir}, Options{})
	if err == nil || !strings.Contains(err.Error(), "providers.x.base_url") {
		t.Fatal(err)
	}
}

func TestDefaultProviderConfig(t *testing.T) {
	c, err := LoadConfig(nil, []string{"CLLAMA_DEFAULT_PROVIDER=OpenRouter", "CLLAMA_ANTHROPIC_PROVIDER=Claude-Proxy"}, io.Discard)
	if err != nil || c.DefaultProvider != "openrouter" || c.FormatProviders["anthropic"] != "claude-proxy" {
		t.Fatalf("%v %+v", err, c)
	}
	c, err = LoadConfig([]string{"-default-provider", "openai"}, []string{"CLLAMA_DEFAULT_PROVIDER=openrouter"}, io.Discard)
	if err != nil || c.DefaultProvider != "openai" {
		t.Fatalf("flag: %v %+v", err, c)
	}
	// A default provider the pod does not configure is an operator
	// error, reported at start-up.
	_, err = New(Config{AuthDir: t.TempDir(), DefaultProvider: "nope"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "CLLAMA_DEFAULT_PROVIDER") {
		t.Fatalf("New: %v", err)
	}
}

func TestLoadConfigCircuit(t *testing.T) {
	c, err := LoadConfig(nil, nil, io.Discard)
	if err != nil || c.CircuitFailures != 5 || c.CircuitOpen != 30*time.Second {
		t.Fatalf("defaults %d %v %v", c.CircuitFailures, c.CircuitOpen, err)
	}
	c, err = LoadConfig([]string{"-circuit-open", "1m"}, []string{"CLLAMA_CIRCUIT_FAILURES=3", "CLLAMA_CIRCUIT_OPEN=10s"}, io.Discard)
	if err != nil || c.CircuitFailures != 3 || c.CircuitOpen != time.Minute {
		t.Fatalf("env and flag: %d %v %v", c.CircuitFailures, c.CircuitOpen, err)
	}
	for _, bad := range []string{"CLLAMA_CIRCUIT_FAILURES=0", "CLLAMA_CIRCUIT_FAILURES=many", "CLLAMA_CIRCUIT_OPEN=soon"} {
		if _, err := LoadConfig(nil, []string{bad}, io.Discard); err == nil || !strings.Contains(err.Error(), strings.Split(bad, "=")[0]) {
			t.Errorf("%s: %v, want an error naming the variable", bad, err)
		}
	}
}
