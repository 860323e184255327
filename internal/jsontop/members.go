package jsontop

import (
	"strconv"
)

// The stream assemblers decode every event of a stream for history, and
// encoding/json's reflection decoder cost more than relaying the event.
// Their fast paths read the common shapes with the byte scanner and leave
// everything else to encoding/json; the helpers below tell the two apart.

// StructMembers calls fn for each member of the object at b[i] whose key
// is one of known (at most 64), with the key's index in known and the
// value's span in b; other members are skipped, as encoding/json skips
// members a struct has no field for. It returns false when fn does, and
// for the shapes whose decoding into a struct it leaves to encoding/json:
// a key that is escaped or not ASCII, that differs from a known key in
// case only (encoding/json matches field names case-insensitively), or
// that appears twice. b[i:] is valid JSON (Valid).
func StructMembers(b []byte, i int, known []string, fn func(k int, v []byte) bool) bool {
	var seen uint64
	ok := true
	whole := Object(b, i, func(raw []byte, start, end int) bool {
		k, plain := knownKey(raw, known, &seen)
		switch {
		case !plain:
			ok = false
		case k >= 0:
			ok = fn(k, b[start:end])
		}
		return ok
	})
	return whole && ok
}

// knownKey is the index in known of the member name raw (as Object
// passes it), -1 for a member a struct has no field for; plain is false
// where encoding/json could decode the member otherwise than the name
// reads: a key that is escaped or not ASCII, that differs from a known
// key in case only, or a known key seen before (seen marks them).
func knownKey(raw []byte, known []string, seen *uint64) (k int, plain bool) {
	if !PlainKey(raw) {
		return -1, false
	}
	for k, name := range known {
		if string(raw) == name {
			if *seen&(1<<k) != 0 {
				return -1, false
			}
			*seen |= 1 << k
			return k, true
		}
		if EqualFoldASCII(raw, name) {
			return -1, false
		}
	}
	return -1, true
}

// ValidObject walks the object that starts at b[i] and checks it as
// Valid would while it goes, for decoders that read a document in
// one pass. For each member it calls fn with the member's raw key (as
// Object passes it; checked) and the index where its value
// starts; fn returns the index just after the value, having checked it
// itself (ValidValue at the object's depth, or a walk of its own
// one level deeper), or false to stop. It returns the index just after
// the object, and false where b[i:] does not start with a valid object or
// fn stopped.
func ValidObject(b []byte, i int, fn func(key []byte, start int) (end int, ok bool)) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	return validList(b, i, '}', func(i int) (int, bool) {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		end, ok := ValidString(b, i)
		if !ok {
			return end, false
		}
		key := b[i+1 : end-1]
		if i = SkipSpace(b, end); i >= len(b) || b[i] != ':' {
			return i, false
		}
		return fn(key, SkipSpace(b, i+1))
	})
}

// ValidArray is ValidObject for the array that starts at b[i]: fn gets
// the index where each element starts.
func ValidArray(b []byte, i int, fn func(start int) (end int, ok bool)) (int, bool) {
	if i >= len(b) || b[i] != '[' {
		return i, false
	}
	return validList(b, i, ']', fn)
}

// validList walks the items of the object or array whose opening bracket
// is b[i], up to its closing one: item reads one (a member, an element)
// and returns the index after it.
func validList(b []byte, i int, closing byte, item func(i int) (int, bool)) (int, bool) {
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = item(i); !ok {
			return i, false
		}
		if i = SkipSpace(b, i); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case closing:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// ValidMembers is StructMembers in one pass over a document not yet
// checked (ValidObject): for each member named in known, fn gets the index
// where its value starts and returns the index just after it, having
// checked it; other members are checked and skipped. It returns the index
// just after the object, and false, as StructMembers does, for what it
// leaves to encoding/json, and for a document that is not valid, which
// the caller then checks the slow way.
func ValidMembers(b []byte, i, depth int, known []string, fn func(k, start int) (end int, ok bool)) (int, bool) {
	var seen uint64
	return ValidObject(b, i, func(raw []byte, start int) (int, bool) {
		switch k, plain := knownKey(raw, known, &seen); {
		case !plain:
			return start, false
		case k >= 0:
			return fn(k, start)
		}
		return ValidValue(b, start, depth)
	})
}

// PlainKey reports whether a raw member name (as jsontop passes it) is
// ASCII without escapes: it decodes to itself.
func PlainKey(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// The value decoders below read a valid JSON value (a StructMembers span)
// into a field as encoding/json would; false where encoding/json reports
// an error (the caller then leaves the whole document to it).

// DecodeString decodes a string into s; null leaves s as it is.
func DecodeString(v []byte, s *string) bool {
	switch v[0] {
	case 'n':
		return true
	case '"':
		u, err := Unquote(v)
		*s = u
		return err == nil
	}
	return false
}

// DecodeStringPtr decodes a string or null into p.
func DecodeStringPtr(v []byte, p **string) bool {
	switch v[0] {
	case 'n':
		*p = nil
		return true
	case '"':
		u, err := Unquote(v)
		*p = &u
		return err == nil
	}
	return false
}

// DecodeInt64 decodes an integer into n; null leaves n as it is.
func DecodeInt64(v []byte, n *int64) bool {
	if v[0] == 'n' {
		return true
	}
	x, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return false
	}
	*n = x
	return true
}

// DecodeInt is DecodeInt64 for an int.
func DecodeInt(v []byte, n *int) bool {
	x := int64(*n)
	if !DecodeInt64(v, &x) || x != int64(int(x)) {
		return false
	}
	*n = int(x)
	return true
}
