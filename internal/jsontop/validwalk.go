package jsontop

// ValidWalk is Valid and Walk in one pass: it validates b as Valid does
// and, when b is an object, calls fn for each of its top-level members as
// Walk would (the key's raw bytes, the value's span). fn sees every member
// of a valid object; on an invalid document it may have seen some.
// object reports whether b is an object.
func ValidWalk(b []byte, fn func(key []byte, start, end int)) (valid, object bool) {
	v := validator{b: b}
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		end, ok := v.value(i, 0)
		return ok && SkipSpace(b, end) == len(b), false
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return SkipSpace(b, i+1) == len(b), true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false, true
		}
		keyEnd, ok := v.str(i)
		if !ok {
			return false, true
		}
		key := b[i+1 : keyEnd-1]
		i = SkipSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return false, true
		}
		start := SkipSpace(b, i+1)
		end, ok := v.value(start, 1)
		if !ok {
			return false, true
		}
		fn(key, start, end)
		i = SkipSpace(b, end)
		if i >= len(b) {
			return false, true
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case '}':
			return SkipSpace(b, i+1) == len(b), true
		default:
			return false, true
		}
	}
}
