package jsontop

// ValidWalk is Valid and Walk in one pass: it validates b as Valid does
// and, when b is an object, calls fn for each of its top-level members as
// Walk would (the key's raw bytes, the value's span). fn sees every member
// of a valid object; on an invalid document it may have seen some.
// object reports whether b is an object.
func ValidWalk(b []byte, fn func(key []byte, start, end int)) (valid, object bool) {
	v := validator{b: b, member: fn}
	i := SkipSpace(b, 0)
	end, ok := v.value(i, 0)
	return ok && SkipSpace(b, end) == len(b), i < len(b) && b[i] == '{'
}
