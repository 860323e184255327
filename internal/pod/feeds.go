package pod

import (
	"fmt"
	"strings"
)

// feeds decodes a feeds: or feeds-defaults: list.
func (d *decoder) feeds(key string, v any, spreadOK bool) ([]FeedEntry, error) {
	if v == nil {
		return []FeedEntry{}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, d.errf(key, "write a list of feed names or {source, path, ttl}", "must be a list, got %s", typeName(v))
	}
	out := make([]FeedEntry, 0, len(list))
	spreadAt := -1
	for i, e := range list {
		ekey := fmt.Sprintf("%s[%d]", key, i)
		switch t := e.(type) {
		case string:
			if t == Spread {
				if !spreadOK {
					return nil, d.errf(ekey, "remove it; `...` belongs in a service's feeds list", "`...` cannot appear in the pod defaults")
				}
				if spreadAt >= 0 {
					return nil, d.errf(ekey, "keep a single `...`", "`...` appears twice (first at %s[%d])", key, spreadAt)
				}
				spreadAt = i
				out = append(out, FeedEntry{Spread: true, Key: ekey})
				continue
			}
			if t == "" {
				return nil, d.errf(ekey, "write a feed name a descriptor declares", "empty feed name")
			}
			out = append(out, FeedEntry{Name: t, Key: ekey})
		case map[string]any:
			f, err := d.feedObject(ekey, t)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		default:
			return nil, d.errf(ekey, "write a feed name or {source, path, ttl}", "must be a string or a mapping, got %s", typeName(e))
		}
	}
	return out, nil
}

func (d *decoder) feedObject(key string, m map[string]any) (FeedEntry, error) {
	f := FeedEntry{Key: key}
	d.unknownKeys(key, m, []string{"source", "path", "ttl", "name"})
	var err error
	if f.Name, err = d.str(key+".name", m["name"], false); err != nil {
		return f, err
	}
	if f.Source, err = d.str(key+".source", m["source"], false); err != nil {
		return f, err
	}
	if f.Path, err = d.str(key+".path", m["path"], false); err != nil {
		return f, err
	}
	if raw, ok := m["ttl"]; ok && raw != nil {
		n, err := d.integer(key+".ttl", raw)
		if err != nil {
			return f, err
		}
		if n < 0 {
			return f, d.errf(key+".ttl", "use seconds >= 0", "must be >= 0, got %d", n)
		}
		f.TTL = &n
	}
	switch {
	case f.Path != "" && f.Source == "":
		return f, d.errf(key+".source", "name the pod service that serves "+f.Path, "required with path")
	case f.Path != "" && !strings.HasPrefix(f.Path, "/"):
		return f, d.errf(key+".path", "start the path with /", "%q must start with /", f.Path)
	case f.Path == "" && f.Name == "":
		return f, d.errf(key, "give path (with source) or the name of a descriptor feed", "neither path nor name is set")
	}
	return f, nil
}

// ExpandFeeds applies the same defaults rule as ExpandGrants to feeds.
func ExpandFeeds(file, service string, c *Claw, s *ServiceClaw) ([]FeedEntry, error) {
	if !s.HasFeeds {
		return append([]FeedEntry(nil), c.FeedsDefaults...), nil
	}
	out := make([]FeedEntry, 0, len(s.Feeds)+len(c.FeedsDefaults))
	for _, f := range s.Feeds {
		if !f.Spread {
			out = append(out, f)
			continue
		}
		if !c.HasFeedsDefaults {
			return nil, &Error{File: file, Service: service, Key: f.Key, Problem: "`...` splices feeds-defaults, but the pod declares none", Fix: "add x-claw.feeds-defaults at pod level, or remove `...`"}
		}
		out = append(out, c.FeedsDefaults...)
	}
	return out, nil
}
