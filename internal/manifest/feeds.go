package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Feed is one entry of <context>/<agent-id>/feeds.json (spec 003).
type Feed struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Path   string `json:"path"`
	// TTL is the maximum staleness in seconds.
	TTL int `json:"ttl"`
	// URL is the resolved fetch URL (base URL of Source plus Path).
	URL string `json:"url,omitempty"`
	// Auth is an optional bearer token for the feed's service.
	Auth string `json:"auth,omitempty"`
}

// UnmarshalJSON accepts auth either as a bearer token string or as an
// object {"type":"bearer","token":"..."}.
func (f *Feed) UnmarshalJSON(data []byte) error {
	type plain Feed
	var raw struct {
		plain
		Auth json.RawMessage `json:"auth"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*f = Feed(raw.plain)
	f.Auth = ""
	a := bytes.TrimSpace(raw.Auth)
	switch {
	case len(a) == 0 || bytes.Equal(a, []byte("null")):
	case a[0] == '"':
		return json.Unmarshal(a, &f.Auth)
	default:
		var obj Auth
		if err := json.Unmarshal(a, &obj); err != nil {
			return fmt.Errorf("auth: must be a token string or {\"type\":\"bearer\",\"token\":...}")
		}
		if obj.Type != "" && obj.Type != "bearer" && obj.Type != "none" {
			return fmt.Errorf("auth.type: %q must be \"bearer\"", obj.Type)
		}
		if obj.Type != "none" {
			f.Auth = obj.Token
		}
	}
	return nil
}

// ParseFeeds decodes and validates feeds.json (a JSON array).
func ParseFeeds(data []byte) ([]Feed, error) {
	var feeds []Feed
	if err := decodeOne(data, &feeds); err != nil {
		return nil, fmt.Errorf("feeds.json: %w", err)
	}
	seen := make(map[string]int, len(feeds))
	for i, f := range feeds {
		switch {
		case f.Name == "":
			return nil, fmt.Errorf("feeds.json: [%d].name: required", i)
		case f.URL == "" && f.Source == "":
			return nil, fmt.Errorf("feeds.json: [%d] (%s): needs url or source", i, f.Name)
		case f.URL != "" && !strings.HasPrefix(f.URL, "http://") && !strings.HasPrefix(f.URL, "https://"):
			return nil, fmt.Errorf("feeds.json: [%d].url: %q must be an http:// or https:// URL", i, f.URL)
		case f.URL == "" && !strings.HasPrefix(f.Path, "/"):
			return nil, fmt.Errorf("feeds.json: [%d].path: %q must start with /", i, f.Path)
		case f.TTL < 0:
			return nil, fmt.Errorf("feeds.json: [%d].ttl: must be >= 0 seconds", i)
		}
		if j, dup := seen[f.Name]; dup {
			return nil, fmt.Errorf("feeds.json: [%d].name: %q duplicates [%d]", i, f.Name, j)
		}
		seen[f.Name] = i
	}
	return feeds, nil
}

// FetchURL is the URL to GET: URL when compiled, otherwise
// http://<source><path> (the service's default port).
func (f *Feed) FetchURL() string {
	if f.URL != "" {
		return f.URL
	}
	return "http://" + f.Source + f.Path
}
