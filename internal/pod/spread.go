package pod

import "fmt"

// Spread is the list entry that splices the pod defaults in place.
const Spread = "..."

// listKind is what differs between the tools and the feeds lists; the
// rest, decoding a list with `...` and the defaults rule (spec 000 §2), is
// the same for both and written once, in decodeList and expandList.
type listKind[E any] struct {
	// name is the list's key: "tools" or "feeds" (the defaults are
	// "<name>-defaults").
	name string
	// listFix says how to write the list when it is not one.
	listFix string
	// entryFix and entryProblem (a format taking the entry's type name)
	// are for an entry that is neither a string nor a mapping.
	entryFix, entryProblem string
	// spread makes the `...` entry written at key; spreadKey reports
	// whether e is one and where it was written.
	spread    func(key string) E
	spreadKey func(e E) (key string, ok bool)
	// str and object decode a string and a mapping entry.
	str    func(d *decoder, key, s string) (E, error)
	object func(d *decoder, key string, m map[string]any) (E, error)
}

var toolsList = listKind[GrantEntry]{
	name:         "tools",
	listFix:      "write a list such as [{service: trading-api, allow: all}]",
	entryFix:     "write {service: <name>, allow: all | [tool, ...]}",
	entryProblem: "must be a mapping, a service name or `...`, got %s",
	spread:       func(key string) GrantEntry { return GrantEntry{Spread: true, Key: key} },
	spreadKey:    func(g GrantEntry) (string, bool) { return g.Key, g.Spread },
	str:          (*decoder).grantName,
	object:       (*decoder).grantObject,
}

var feedsList = listKind[FeedEntry]{
	name:         "feeds",
	listFix:      "write a list of feed names or {source, path, ttl}",
	entryFix:     "write a feed name or {source, path, ttl}",
	entryProblem: "must be a string or a mapping, got %s",
	spread:       func(key string) FeedEntry { return FeedEntry{Spread: true, Key: key} },
	spreadKey:    func(f FeedEntry) (string, bool) { return f.Key, f.Spread },
	str:          (*decoder).feedName,
	object:       (*decoder).feedObject,
}

// decodeList decodes a list of kind k written at key: a tools: or feeds:
// list, or with spreadOK false, their pod defaults.
func decodeList[E any](d *decoder, k listKind[E], key string, v any, spreadOK bool) ([]E, error) {
	if v == nil {
		return []E{}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, d.errf(key, k.listFix, "must be a list, got %s", typeName(v))
	}
	out := make([]E, 0, len(list))
	spreadAt := -1
	for i, e := range list {
		ekey := fmt.Sprintf("%s[%d]", key, i)
		var entry E
		var err error
		switch t := e.(type) {
		case string:
			if t != Spread {
				entry, err = k.str(d, ekey, t)
				break
			}
			if !spreadOK {
				return nil, d.errf(ekey, "remove it; `...` belongs in a service's "+k.name+" list", "`...` cannot appear in the pod defaults")
			}
			if spreadAt >= 0 {
				return nil, d.errf(ekey, "keep a single `...`", "`...` appears twice (first at %s[%d])", key, spreadAt)
			}
			spreadAt = i
			entry = k.spread(ekey)
		case map[string]any:
			entry, err = k.object(d, ekey, t)
		default:
			return nil, d.errf(ekey, k.entryFix, k.entryProblem, typeName(e))
		}
		if err != nil {
			return nil, err
		}
		out = append(out, entry)
	}
	return out, nil
}

// expandList applies the defaults rule (spec 000 §2): an omitted list
// (declared false) inherits the defaults; a declared one replaces them,
// with `...` splicing the defaults at its position. `...` without defaults
// is an error.
func expandList[E any](k listKind[E], file, service string, declared bool, list []E, hasDefaults bool, defaults []E) ([]E, error) {
	if !declared {
		return append([]E(nil), defaults...), nil
	}
	out := make([]E, 0, len(list)+len(defaults))
	for _, e := range list {
		key, spread := k.spreadKey(e)
		if !spread {
			out = append(out, e)
			continue
		}
		if !hasDefaults {
			return nil, &Error{File: file, Service: service, Key: key,
				Problem: "`...` splices " + k.name + "-defaults, but the pod declares none",
				Fix:     "add x-claw." + k.name + "-defaults at pod level, or remove `...`"}
		}
		out = append(out, defaults...)
	}
	return out, nil
}
