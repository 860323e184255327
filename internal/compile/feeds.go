package compile

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/clawdapus/clawgo/internal/capability"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// agentFeeds resolves the agent's feed subscriptions (spec 003) after the
// defaults rule: short names against every descriptor's feeds[], explicit
// entries against the pod's services.
func (b *builder) agentFeeds(a *Agent, svc *pod.Service) error {
	entries, err := pod.ExpandFeeds(b.pod.File, svc.Name, &b.pod.Claw, svc.Claw)
	if err != nil {
		return err
	}
	byName := map[string]int{}
	keyOf := map[string]string{}
	for _, e := range entries {
		f, err := b.resolveFeed(svc, e)
		if err != nil {
			return err
		}
		base, err := b.baseURL(b.pod.Services[f.Source])
		if err != nil {
			return err
		}
		f.URL = base + f.Path
		auth, err := b.auth(a, svc, f.Source)
		if err != nil {
			return err
		}
		if auth != nil {
			f.Auth = auth.Token
		}
		if i, dup := byName[f.Name]; dup {
			if a.Feeds[i] == f {
				continue // the same subscription twice (e.g. via `...`)
			}
			return &pod.Error{File: b.pod.File, Service: svc.Name, Key: e.Key, Problem: fmt.Sprintf("feed name %q is already used by %s", f.Name, keyOf[f.Name]), Fix: "give one of them a distinct name: {source, path, name}"}
		}
		byName[f.Name] = len(a.Feeds)
		keyOf[f.Name] = e.Key
		a.Feeds = append(a.Feeds, f)
	}
	return nil
}

func (b *builder) resolveFeed(svc *pod.Service, e pod.FeedEntry) (manifest.Feed, error) {
	errf := func(key, fix, format string, args ...any) error {
		return &pod.Error{File: b.pod.File, Service: svc.Name, Key: key, Problem: fmt.Sprintf(format, args...), Fix: fix}
	}
	if e.Short() {
		var providers []string
		for _, name := range sortedKeys(b.descs) {
			if b.descs[name].Descriptor.Feed(e.Name) != nil {
				providers = append(providers, name)
			}
		}
		switch len(providers) {
		case 0:
			return manifest.Feed{}, errf(e.Key, "use the explicit form {source, path, ttl}, or a feed name a descriptor declares ("+b.feedNames()+")", "no descriptor provides a feed named %q", e.Name)
		case 1:
		default:
			return manifest.Feed{}, errf(e.Key, fmt.Sprintf("say which one with {source: %s, name: %s}", providers[0], e.Name), "feed %q is provided by more than one service: %s", e.Name, strings.Join(providers, ", "))
		}
		df := b.descs[providers[0]].Descriptor.Feed(e.Name)
		return feedFrom(providers[0], df, e), nil
	}
	if _, ok := b.pod.Services[e.Source]; !ok {
		return manifest.Feed{}, errf(e.Key+".source", "name a service defined under services: (known: "+strings.Join(b.pod.ServiceNames(), ", ")+")", "%q is not a service of the pod", e.Source)
	}
	sd := b.descs[e.Source]
	if e.Path == "" {
		// {source, name}: a named feed of that service's descriptor.
		if sd == nil || sd.Descriptor.Feed(e.Name) == nil {
			return manifest.Feed{}, errf(e.Key+".name", "add path (and ttl) for an undeclared feed", "%q declares no feed named %q", e.Source, e.Name)
		}
		return feedFrom(e.Source, sd.Descriptor.Feed(e.Name), e), nil
	}
	f := manifest.Feed{Name: e.Name, Source: e.Source, Path: e.Path, TTL: defaultFeedTTL}
	if sd != nil {
		for _, df := range sd.Descriptor.Feeds {
			if df.Path == e.Path {
				f.TTL = df.TTL
				if f.Name == "" {
					f.Name = df.Name
				}
				break
			}
		}
	}
	if f.Name == "" {
		f.Name = FeedNameFromPath(e.Path)
		if f.Name == "" {
			return manifest.Feed{}, errf(e.Key+".name", "add name: <feed-name>", "cannot derive a feed name from path %q", e.Path)
		}
	}
	if e.TTL != nil {
		f.TTL = *e.TTL
	}
	return f, nil
}

func feedFrom(source string, df *capability.Feed, e pod.FeedEntry) manifest.Feed {
	f := manifest.Feed{Name: df.Name, Source: source, Path: df.Path, TTL: df.TTL}
	if e.TTL != nil {
		f.TTL = *e.TTL
	}
	return f
}

var feedNameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// FeedNameFromPath derives a feed name from its path (spec 003: "if
// omitted, Clawdapus derives it from the path"): the last path segment that
// is not a {placeholder}, with unsafe characters replaced by '-'. For
// example /api/v1/market-summary gives "market-summary".
func FeedNameFromPath(p string) string {
	p, _, _ = strings.Cut(p, "?")
	segs := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		if s == "" || strings.HasPrefix(s, "{") {
			continue
		}
		return strings.Trim(feedNameUnsafe.ReplaceAllString(s, "-"), "-.")
	}
	return ""
}

func (b *builder) feedNames() string {
	var names []string
	for _, svc := range sortedKeys(b.descs) {
		for _, f := range b.descs[svc].Descriptor.Feeds {
			names = append(names, f.Name)
		}
	}
	if len(names) == 0 {
		return "none declared"
	}
	return strings.Join(names, ", ")
}
