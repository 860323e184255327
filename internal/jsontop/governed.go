package jsontop

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Readers disagree on member names. encoding/json (and other decoders
// written for convenience) matches a struct field's name case-insensitively
// and lets the last of repeated members win; Python's json and JavaScript
// match exactly and also keep the last; some streaming parsers keep the
// first. A body cllama routes or governs by a member it reads one way and
// a provider (or tool service) reads another way is an attack: a runner
// sends {"model":"allowed","MODEL":"forbidden"} and the provider runs the
// forbidden model while every record says the allowed one. So the members
// cllama decides by must be unambiguous under every such reader: spelled
// exactly, and present at most once. Shape names those members, object by
// object; Ambiguous finds the first one that is not.

// Shape is the governed members of an object, and the shapes of the
// objects nested under some of them. Build it with NewShape; it is
// read-only afterwards and safe for concurrent use.
type Shape struct {
	members []governedMember
	// nested maps a member to the shape of the object it holds, or of
	// each object of the array it holds.
	nested map[string]*Shape
}

type governedMember struct {
	name   string // as the format spells it
	folded string // Fold(name)
}

// NewShape returns the shape of an object whose governed members are
// members, with nested shapes for some of them (nested keys need not be
// repeated in members: they are governed too).
func NewShape(members []string, nested map[string]*Shape) *Shape {
	s := &Shape{nested: nested}
	seen := map[string]bool{}
	add := func(m string) {
		if !seen[m] {
			seen[m] = true
			s.members = append(s.members, governedMember{name: m, folded: Fold(m)})
		}
	}
	for _, m := range members {
		add(m)
	}
	for _, m := range slices.Sorted(maps.Keys(nested)) {
		add(m)
	}
	if len(s.members) > 64 {
		panic("jsontop: a shape governs at most 64 members")
	}
	return s
}

// Members returns the governed member names of the object, in order.
func (s *Shape) Members() []string {
	out := make([]string, len(s.members))
	for i, m := range s.members {
		out[i] = m.name
	}
	return out
}

// Fold is a member name as encoding/json compares it: each letter mapped
// to upper case after lower case, so that two names equal under Fold are
// the same field to it ("model", "MODEL", "Model"; and "ſtream" with a
// long s, or a Kelvin sign for k, which fold to ASCII letters).
func Fold(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteByte(byte(r))
			continue
		}
		b.WriteRune(unicode.ToUpper(unicode.ToLower(r)))
	}
	return b.String()
}

// Ambiguity is a governed member that some reader could read differently
// from cllama.
type Ambiguity struct {
	// Path is where the object holding it is, in the body ("" for the top
	// level, "messages[2]", "messages[2].tool_calls[0].function").
	Path string
	// Member is the governed member's name; Key is the name as written
	// (escapes decoded), which differs from Member when it is spelled in
	// another case.
	Member, Key string
}

// Repeated reports whether the member is present twice, exactly spelled.
func (a *Ambiguity) Repeated() bool { return a.Member == a.Key }

// Error describes the ambiguity for the runner: what was refused and how
// to send it.
func (a *Ambiguity) Error() string {
	where := ""
	if a.Path != "" {
		where = " in " + a.Path
	}
	if a.Repeated() {
		return "request body has more than one " + strconv.Quote(a.Member) + " member" + where +
			": readers differ on which one counts, so cllama refuses the body; send it once"
	}
	return "request body member " + quoteBounded(a.Key) + where + " is " + strconv.Quote(a.Member) +
		" spelled in another case: readers differ on whether it is the same member, so cllama refuses the body; spell it " +
		strconv.Quote(a.Member) + " exactly, once"
}

func quoteBounded(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.QuoteToASCII(s)
}

// Ambiguous checks the object that starts b (after white space) against
// s: every governed member is spelled exactly and present at most once,
// in the object and in the objects nested under its governed members. It
// returns the first ambiguity in document order, or nil. b must be valid
// JSON (Valid); what is not an object is not checked. The walk is one
// pass over the governed part of the document; it allocates only for
// keys holding escapes or non-ASCII letters, and for its answer.
func Ambiguous(b []byte, s *Shape) *Ambiguity {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	w := shapeWalk{b: b}
	w.object(i, s)
	return w.found
}

// MemberAmbiguity checks one member of an object of shape s, for a
// caller that walks the object itself (as the edge does while validating):
// its name against the governed members, given those already seen
// exactly spelled (bit k of *seen for member k; shapes hold at most 64),
// and, when it is governed with a nested shape, the object its value
// holds or each object of the array it holds, as Ambiguous does. value is
// the member's valid JSON value.
func (s *Shape) MemberAmbiguity(rawKey, value []byte, seen *uint64) *Ambiguity {
	k, a := s.check(rawKey, seen)
	if a != nil || k < 0 {
		return a
	}
	name := s.members[k].name
	inner := s.nested[name]
	if inner == nil {
		return nil
	}
	w := shapeWalk{b: value, path: []pathStep{{member: name}}}
	w.value(SkipSpace(value, 0), inner)
	return w.found
}

// check checks rawKey against s's governed members (see
// MemberAmbiguity), also returning the index of the governed
// member rawKey spells exactly (-1 for none).
func (s *Shape) check(rawKey []byte, seen *uint64) (int, *Ambiguity) {
	k, exact, ok := s.match(rawKey)
	if !ok {
		return -1, nil
	}
	m := s.members[k].name
	if !exact {
		key, _ := DecodeKey(rawKey)
		return -1, &Ambiguity{Member: m, Key: key}
	}
	if *seen&(1<<k) != 0 {
		return -1, &Ambiguity{Member: m, Key: m}
	}
	*seen |= 1 << k
	return k, nil
}

// match finds the governed member rawKey names under Fold: its index, and
// whether it is spelled exactly.
func (s *Shape) match(rawKey []byte) (k int, exact, ok bool) {
	if ascii(rawKey) {
		for k, m := range s.members {
			if EqualFoldASCII(rawKey, m.name) {
				return k, string(rawKey) == m.name, true
			}
		}
		return 0, false, false
	}
	key, err := DecodeKey(rawKey)
	if err != nil {
		return 0, false, false
	}
	f := Fold(key)
	for k, m := range s.members {
		if f == m.folded {
			return k, key == m.name, true
		}
	}
	return 0, false, false
}

// EqualFoldASCII reports whether the ASCII key b equals s up to the case
// of its letters.
func EqualFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// shapeWalk is one Ambiguous walk.
type shapeWalk struct {
	b     []byte
	found *Ambiguity
	// path is where the walk is: a member's name, or an element's index
	// (member ""), from the top; rendered only for an answer.
	path []pathStep
}

type pathStep struct {
	member string
	index  int
}

func (w *shapeWalk) pathString() string {
	var sb strings.Builder
	for _, p := range w.path {
		if p.member != "" {
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(p.member)
			continue
		}
		sb.WriteByte('[')
		sb.WriteString(strconv.Itoa(p.index))
		sb.WriteByte(']')
	}
	return sb.String()
}

// object checks the object at b[i] and returns the index after it.
func (w *shapeWalk) object(i int, s *Shape) int {
	b := w.b
	var seen uint64
	i = SkipSpace(b, i+1)
	for i < len(b) && w.found == nil {
		switch b[i] {
		case '}':
			return i + 1
		case ',':
			i = SkipSpace(b, i+1)
			continue
		}
		keyEnd := skipString(b, i)
		if keyEnd > len(b) {
			return len(b)
		}
		rawKey := b[i+1 : keyEnd-1]
		i = SkipSpace(b, SkipSpace(b, keyEnd)+1) // past the ':'
		k, a := s.check(rawKey, &seen)
		if a != nil {
			a.Path = w.pathString()
			w.found = a
			return len(b)
		}
		var inner *Shape
		if k >= 0 {
			inner = s.nested[s.members[k].name]
		}
		if inner == nil {
			i = SkipSpace(b, SkipValue(b, i))
			continue
		}
		w.path = append(w.path, pathStep{member: s.members[k].name})
		i = SkipSpace(b, w.value(i, inner))
		w.path = w.path[:len(w.path)-1]
	}
	return len(b)
}

// value checks the value at b[i] against s when it is an object, or each
// object of it when it is an array, and returns the index after it.
func (w *shapeWalk) value(i int, s *Shape) int {
	b := w.b
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '{':
		return w.object(i, s)
	case '[':
		n := 0
		i = SkipSpace(b, i+1)
		for i < len(b) && w.found == nil {
			switch b[i] {
			case ']':
				return i + 1
			case ',':
				i = SkipSpace(b, i+1)
				continue
			}
			if b[i] == '{' {
				w.path = append(w.path, pathStep{index: n})
				i = w.object(i, s)
				w.path = w.path[:len(w.path)-1]
			} else {
				i = SkipValue(b, i)
			}
			i = SkipSpace(b, i)
			n++
		}
		return len(b)
	}
	return SkipValue(b, i)
}
