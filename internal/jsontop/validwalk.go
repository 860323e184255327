package jsontop

// ValidWalk is Valid and Walk in one pass: it validates b as Valid does
// and, when b is an object, calls fn for each of its top-level members as
// Walk would (the key's raw bytes, the value's span). fn sees every member
// of a valid object; on an invalid document it may have seen some.
// object reports whether b is an object.
//
// plain reports, of a valid b, that it is ASCII and holds no raw CR or LF:
// valid UTF-8 on one line as it stands, which a writer of JSON lines would
// otherwise scan b again to learn. It costs the pass next to nothing; it
// is false for an invalid b.
func ValidWalk(b []byte, fn func(key []byte, start, end int)) (valid, object, plain bool) {
	v := validator{b: b, member: fn}
	i := v.space(0)
	end, ok := v.value(i, 0)
	valid = ok && v.space(end) == len(b)
	return valid, i < len(b) && b[i] == '{', valid && !v.breaks && v.high&0x8080808080808080 == 0
}
