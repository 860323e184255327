package manifest

import (
	"slices"
	"strings"
	"testing"
)

const validTools = `{
  "version": 1,
  "tools": [{
    "name": "trading-api.get_market_context",
    "description": "ctx",
    "inputSchema": {"type":"object","properties":{"claw_id":{"type":"string"}}},
    "annotations": {"readOnly": true},
    "execution": {"transport":"http","service":"trading-api","base_url":"http://trading-api:4000",
      "method":"GET","path":"/api/v1/market_context/{claw_id}","auth":{"type":"bearer","token":"t"}}
  }],
  "policy": {"max_rounds": 3}
}`

func TestParseToolsDefaultsAndOverrides(t *testing.T) {
	m, err := ParseTools([]byte(validTools))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultPolicy()
	want.MaxRounds = 3
	if m.Policy != want {
		t.Fatalf("policy = %+v, want %+v", m.Policy, want)
	}
	if want.MaxToolCallsPerRound != 32 || want.MaxToolCallsPerTurn != 128 {
		t.Fatalf("default call caps = %d/%d, want 32/128", want.MaxToolCallsPerRound, want.MaxToolCallsPerTurn)
	}
	caps, err := ParseTools([]byte(strings.Replace(validTools, `"max_rounds": 3`, `"max_tool_calls_per_round": 2, "max_tool_calls_per_turn": 5`, 1)))
	if err != nil || caps.Policy.MaxToolCallsPerRound != 2 || caps.Policy.MaxToolCallsPerTurn != 5 {
		t.Fatalf("call caps: %+v, %v", caps, err)
	}
	if !m.Tools[0].Annotations.IsReadOnly() {
		t.Fatal("readOnly annotation lost")
	}
	if want.MaxParallelCalls != 4 {
		t.Fatalf("default max_parallel_calls = %d, want 4", want.MaxParallelCalls)
	}
	par, err := ParseTools([]byte(strings.Replace(validTools, `"max_rounds": 3`, `"max_parallel_calls": 2`, 1)))
	if err != nil || par.Policy.MaxParallelCalls != 2 {
		t.Fatalf("max_parallel_calls: %+v, %v", par, err)
	}
}

func TestParallelSafeAnnotation(t *testing.T) {
	m, err := ParseTools([]byte(validTools))
	if err != nil || m.Tools[0].Annotations.IsParallelSafe() {
		t.Fatalf("a tool without parallel_safe must not be parallel-safe: %+v, %v", m, err)
	}
	p, err := ParseTools([]byte(strings.Replace(validTools, `{"readOnly": true}`, `{"readOnly": true, "parallel_safe": true}`, 1)))
	if err != nil || !p.Tools[0].Annotations.IsParallelSafe() {
		t.Fatalf("parallel_safe true: %+v, %v", p, err)
	}
	f, err := ParseTools([]byte(strings.Replace(validTools, `{"readOnly": true}`, `{"parallel_safe": false}`, 1)))
	if err != nil || f.Tools[0].Annotations.IsParallelSafe() {
		t.Fatalf("parallel_safe false: %+v, %v", f, err)
	}
	var none *Annotations
	if none.IsParallelSafe() {
		t.Fatal("nil annotations are not parallel-safe")
	}
}

func TestParseToolsModes(t *testing.T) {
	m, err := ParseTools([]byte(validTools))
	if err != nil || m.Tools[0].Native() || m.Tools[0].Mode != "" {
		t.Fatalf("a tool without mode must read as mediated: %+v, %v", m, err)
	}
	n, err := ParseTools([]byte(strings.Replace(validTools, `"description": "ctx",`, `"description": "ctx", "mode": "native",`, 1)))
	if err != nil || !n.Tools[0].Native() {
		t.Fatalf("mode native: %+v, %v", n, err)
	}
}

func TestParseToolsErrorsNameTheField(t *testing.T) {
	cases := map[string]struct{ from, to, want string }{
		"bad transport":    {`"transport":"http"`, `"transport":"grpc"`, "tools[0].execution.transport"},
		"relative path":    {`"path":"/api/v1/market_context/{claw_id}"`, `"path":"api"`, "tools[0].execution.path"},
		"unnamespaced":     {`"name": "trading-api.get_market_context"`, `"name": "get_market_context"`, "tools[0].name"},
		"schema not obj":   {`"inputSchema": {"type":"object","properties":{"claw_id":{"type":"string"}}}`, `"inputSchema": []`, "tools[0].inputSchema"},
		"zero rounds":      {`"max_rounds": 3`, `"max_rounds": 0`, "policy.max_rounds"},
		"zero calls/round": {`"max_rounds": 3`, `"max_tool_calls_per_round": 0`, "policy.max_tool_calls_per_round"},
		"zero parallel":    {`"max_rounds": 3`, `"max_parallel_calls": 0`, "policy.max_parallel_calls"},
		"turn below round": {`"max_rounds": 3`, `"max_tool_calls_per_turn": 4`, "policy.max_tool_calls_per_turn"},
		"service mismatch": {`"service":"trading-api"`, `"service":"other"`, "tools[0].execution.service"},
		"version":          {`"version": 1`, `"version": 7`, "version"},
		"bearer no token":  {`"token":"t"`, `"token":""`, "tools[0].execution.auth.token"},
		"unknown mode":     {`"description": "ctx",`, `"description": "ctx", "mode": "auto",`, "tools[0].mode"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(validTools, c.from, c.to, 1)
			if in == validTools {
				t.Fatal("replacement did not apply")
			}
			_, err := ParseTools([]byte(in))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "tools.json") {
				t.Fatalf("err = %v, want mention of %q", err, c.want)
			}
		})
	}
}

func TestParseFeedsAuthForms(t *testing.T) {
	feeds, err := ParseFeeds([]byte(`[
	 {"name":"a","source":"svc","path":"/a","ttl":30,"auth":"tok"},
	 {"name":"b","source":"svc","path":"/b","ttl":30,"auth":{"type":"bearer","token":"tok2"}},
	 {"name":"c","url":"http://svc:9/c","ttl":0}]`))
	if err != nil {
		t.Fatal(err)
	}
	if feeds[0].Auth != "tok" || feeds[1].Auth != "tok2" || feeds[2].Auth != "" {
		t.Fatalf("auth = %q %q %q", feeds[0].Auth, feeds[1].Auth, feeds[2].Auth)
	}
	if feeds[0].FetchURL() != "http://svc/a" || feeds[2].FetchURL() != "http://svc:9/c" {
		t.Fatalf("urls: %s %s", feeds[0].FetchURL(), feeds[2].FetchURL())
	}
	for _, bad := range []string{`[{"name":"a","source":"s","path":"x"}]`, `[{"name":"a"}]`, `[{"name":"a","source":"s","path":"/a"},{"name":"a","source":"s","path":"/b"}]`, `{}`} {
		if _, err := ParseFeeds([]byte(bad)); err == nil {
			t.Errorf("ParseFeeds(%s) accepted", bad)
		}
	}
}

func TestProvidersV1AndV2(t *testing.T) {
	ps, err := ParseProviders([]byte(`{"providers":{"openai":{"base_url":"https://api.openai.com/v1","api_key":"k1","auth":"bearer"}}}`))
	if err != nil || ps.Providers["openai"].Secret() != "k1" {
		t.Fatalf("v1: %v", err)
	}
	ps, err = ParseProviders([]byte(`{"version":2,"providers":{"anthropic":{"base_url":"https://api.anthropic.com","auth":"x-api-key",
	  "keys":[{"id":"old","secret":"s-old","state":"retired"},{"id":"a","secret":"s-a","state":"active"},{"id":"b","secret":"s-b","state":"active"}],"active_key_id":"b"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.Providers["anthropic"].Secret(); got != "s-b" {
		t.Fatalf("active key = %q", got)
	}
	ps.Providers["anthropic"].ActiveKeyID = "old"
	if got := ps.Providers["anthropic"].Secret(); got != "s-a" {
		t.Fatalf("retired active key must fall back to a usable one, got %q", got)
	}
	if _, err := ParseProviders([]byte(`{"providers":{"x":{"auth":"basic"}}}`)); err == nil || !strings.Contains(err.Error(), "providers.x.auth") {
		t.Fatalf("bad auth: %v", err)
	}
	if _, err := ParseProviders([]byte(`{"version":2,"providers":{"x":{"keys":[{"id":"a","secret":"s"}],"active_key_id":"zz"}}}`)); err == nil {
		t.Fatal("unknown active key accepted")
	}
}

func TestProvidersFormats(t *testing.T) {
	ps, err := ParseProviders([]byte(`{"providers":{"gw":{"base_url":"http://gw/v1","formats":["responses","openai"]},"plain":{"base_url":"http://p/v1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.Providers["gw"].Formats; !slices.Equal(got, []string{"responses", "openai"}) {
		t.Errorf("gw formats = %q", got)
	}
	if got := ps.Providers["plain"].Formats; got != nil {
		t.Errorf("plain formats = %q, want nil (not declared)", got)
	}
	for in, want := range map[string]string{
		`["openai","respones"]`: `providers.json: providers.gw.formats[1]: "respones" is not an API format cllama speaks; valid: openai, anthropic, responses`,
		`["OpenAI"]`:            `providers.gw.formats[0]: "OpenAI" is not an API format`,
		`["openai","openai"]`:   `providers.gw.formats[1]: "openai" is listed twice`,
		`[]`:                    `providers.gw.formats: empty; list the API formats the provider speaks (openai, anthropic, responses), or leave the key out`,
		`"openai"`:              `providers.json: json: cannot unmarshal string`,
	} {
		_, err := ParseProviders([]byte(`{"providers":{"gw":{"base_url":"http://gw/v1","formats":` + in + `}}}`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("formats %s: err %v, want %q", in, err, want)
		}
	}
}

func TestSplitToken(t *testing.T) {
	for tok, ok := range map[string]bool{
		"analyst:abc": true, "analyst-0:x:y": true, ":abc": false, "analyst:": false,
		"../etc:abc": false, "a/b:c": false, "noseparator": false, ".hidden:x": false,
	} {
		if _, _, got := SplitToken(tok); got != ok {
			t.Errorf("SplitToken(%q) ok = %v, want %v", tok, got, ok)
		}
	}
}

func TestParseMetadataChecksAgent(t *testing.T) {
	if _, err := ParseMetadata([]byte(`{"token":"a:s","pod":"p"}`), "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseMetadata([]byte(`{"token":"b:s"}`), "a"); err == nil {
		t.Fatal("token of another agent accepted")
	}
}

func FuzzParseTools(f *testing.F) {
	f.Add([]byte(validTools))
	f.Add([]byte(`{"version":1,"tools":[],"policy":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseTools(data)
		if err != nil {
			return
		}
		if err := m.Policy.Validate("p"); err != nil {
			t.Fatalf("accepted manifest with invalid policy: %v", err)
		}
		for _, tool := range m.Tools {
			if _, _, ok := SplitToolName(tool.Name); !ok {
				t.Fatalf("accepted tool name %q", tool.Name)
			}
		}
	})
}

func FuzzParseFeeds(f *testing.F) {
	f.Add([]byte(`[{"name":"a","source":"svc","path":"/a","ttl":30,"auth":{"type":"bearer","token":"x"}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		feeds, err := ParseFeeds(data)
		if err != nil {
			return
		}
		for _, fd := range feeds {
			if fd.Name == "" || fd.TTL < 0 {
				t.Fatalf("accepted invalid feed %+v", fd)
			}
		}
	})
}

func FuzzParseProviders(f *testing.F) {
	f.Add([]byte(`{"version":2,"providers":{"a":{"keys":[{"id":"k","secret":"s"}],"active_key_id":"k"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParseProviders(data)
		if err != nil {
			return
		}
		for _, n := range ps.Names() {
			_ = ps.Providers[n].Secret()
		}
	})
}

// A total budget below the per-tool one is valid: the smaller governs.
func TestTotalTimeoutBelowPerToolIsValid(t *testing.T) {
	in := strings.Replace(validTools, `"max_rounds": 3`, `"max_rounds": 3, "total_timeout_ms": 10`, 1)
	m, err := ParseTools([]byte(in))
	if err != nil || m.Policy.TotalTimeoutMS != 10 {
		t.Fatalf("%v %+v", err, m)
	}
}
