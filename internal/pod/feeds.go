package pod

import "strings"

// feedName decodes a feed named by a descriptor.
func (d *decoder) feedName(key, name string) (FeedEntry, error) {
	if name == "" {
		return FeedEntry{}, d.errf(key, "write a feed name a descriptor declares", "empty feed name")
	}
	return FeedEntry{Name: name, Key: key}, nil
}

func (d *decoder) feedObject(key string, m map[string]any) (FeedEntry, error) {
	f := FeedEntry{Key: key}
	if err := d.unknownKeys(key, m, []string{"source", "path", "ttl", "name"}); err != nil {
		return f, err
	}
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
	return expandList(feedsList, file, service, s.HasFeeds, s.Feeds, c.HasFeedsDefaults, c.FeedsDefaults)
}
