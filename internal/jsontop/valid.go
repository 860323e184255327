package jsontop

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// maxDepth matches encoding/json's nesting limit, so both accept the same
// documents.
const maxDepth = 10000

// Valid reports whether b is exactly one JSON value (RFC 8259) with optional
// surrounding whitespace. It accepts exactly what encoding/json.Valid
// accepts (the fuzz test holds it to that) at several times the speed: the
// proxy validates every request body, and transcripts run to megabytes.
func Valid(b []byte) bool {
	v := validator{b: b}
	i, ok := v.value(v.space(0), 0)
	return ok && v.space(i) == len(b)
}

type validator struct {
	b []byte
	// member, when set, is called for each member of the top-level
	// object (depth 1) once its value is validated (ValidWalk).
	member func(key []byte, start, end int)
	// high has the top bit of each byte set that a string held (or may
	// have: bytes scanned past a string's end count too); breaks is set
	// when the whitespace between tokens held a CR or LF. ValidWalk
	// reports them; outside strings a valid document is ASCII, and a
	// string holds no raw CR or LF.
	high   uint64
	breaks bool
}

// space is SkipSpace, noting a line break.
func (v *validator) space(i int) int {
	b := v.b
	for i < len(b) && IsSpace(b[i]) {
		if b[i] == '\n' || b[i] == '\r' {
			v.breaks = true
		}
		i++
	}
	return i
}

func (v *validator) value(i, depth int) (int, bool) {
	b := v.b
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		return v.object(i+1, depth+1)
	case c == '[':
		return v.array(i+1, depth+1)
	case c == '"':
		return v.str(i)
	case c == '-' || (c >= '0' && c <= '9'):
		return v.number(i)
	case c == 't':
		return v.literal(i, "true")
	case c == 'f':
		return v.literal(i, "false")
	case c == 'n':
		return v.literal(i, "null")
	}
	return i, false
}

func (v *validator) literal(i int, lit string) (int, bool) {
	if len(v.b)-i < len(lit) || string(v.b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

func (v *validator) object(i, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	b := v.b
	i = v.space(i)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		keyStart := i
		var ok bool
		if i, ok = v.str(i); !ok {
			return i, false
		}
		key := b[keyStart+1 : i-1]
		i = v.space(i)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		start := v.space(i + 1)
		if i, ok = v.value(start, depth); !ok {
			return i, false
		}
		if depth == 1 && v.member != nil {
			v.member(key, start, i)
		}
		i = v.space(i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = v.space(i + 1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func (v *validator) array(i, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	b := v.b
	i = v.space(i)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = v.value(i, depth); !ok {
			return i, false
		}
		i = v.space(i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = v.space(i + 1)
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// str checks the string starting at b[i] (a quote). Like encoding/json it
// does not reject invalid UTF-8 (decoders replace it with U+FFFD).
func (v *validator) str(i int) (int, bool) {
	b := v.b
	var high uint64 // every byte looked at, or'ed: is any not ASCII?
	for i++; i < len(b); i++ {
		// Skip eight bytes at a time to the next one that needs a look
		// (a quote, a backslash or a control character). A run longer
		// than 16 words (message content: long runs of plain text) is
		// skipped by nextSpecial instead.
		for n := 0; i+8 <= len(b); n++ {
			if n == 16 {
				var h uint64
				i, h = nextSpecial(b, i)
				high |= h
				break
			}
			x := binary.LittleEndian.Uint64(b[i:])
			high |= x
			if m := special8(x); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		high |= uint64(c)
		switch {
		case c == '"':
			v.high |= high
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

// nextSpecial returns the index of the first quote, backslash or control
// character at or after b[i] (len(b) when there is none), and the bytes
// before it or'ed together (as str's high; bytes past it may count too).
// The quote and the backslash are found by bytes.IndexByte, which scans
// many bytes an instruction; control characters, between them, by a test
// of eight bytes at a time half as long as special8. It looks in windows
// that start at 256 bytes and double while they hold none of the three: a
// search never runs far past the byte that ends the run, so a string of
// many short runs between escapes costs linear time.
func nextSpecial(b []byte, i int) (int, uint64) {
	const (
		ones = 0x0101010101010101
		top  = 0x8080808080808080
	)
	var high uint64
	for window := 256; ; window = min(window*2, 64<<10) {
		end := min(len(b), i+window)
		// Escapes come many to a string, its closing quote once: the
		// backslash is looked for first, the quote only before it.
		stop := end
		if e := bytes.IndexByte(b[i:end], '\\'); e >= 0 {
			stop = i + e
		}
		if q := bytes.IndexByte(b[i:stop], '"'); q >= 0 {
			stop = i + q
		}
		for ; i+8 <= stop; i += 8 {
			x := binary.LittleEndian.Uint64(b[i:])
			high |= x
			// The lowest set bit, if any, is the top bit of the first
			// byte below 0x20 (a borrow may set bits above it).
			if m := (x - ones*0x20) & ^x & top; m != 0 {
				return i + bits.TrailingZeros64(m)>>3, high
			}
		}
		for ; i < stop; i++ {
			high |= uint64(b[i])
			if b[i] < 0x20 {
				return i, high
			}
		}
		if stop < end || end == len(b) {
			return stop, high
		}
	}
}

// special8 marks the bytes of x (eight bytes of a string's body, first
// byte lowest) that are a quote, a backslash or a control character: the
// lowest set bit, if any, is the high bit of the first such byte (bits
// above it may be set for bytes that are not).
func special8(x uint64) uint64 {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return ((q-ones) & ^q | (bs-ones) & ^bs | (x-ones*0x20) & ^x) & high
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(b []byte, i int) bool { return i < len(b) && b[i] >= '0' && b[i] <= '9' }

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (v *validator) number(i int) (int, bool) {
	b := v.b
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case isDigit(b, i):
		for isDigit(b, i) {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !isDigit(b, i) {
			return i, false
		}
		for isDigit(b, i) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !isDigit(b, i) {
			return i, false
		}
		for isDigit(b, i) {
			i++
		}
	}
	return i, true
}

// ValidValue checks the value that starts at b[i] as Valid checks it where
// it stands: depth is the number of objects and arrays around it (1 for a
// member of a top-level object). It returns the index just after the
// value. Decoders that read a document in one pass use it for the values
// they do not decode.
func ValidValue(b []byte, i, depth int) (end int, ok bool) {
	v := validator{b: b}
	return v.value(i, depth)
}

// ValidString checks the string that starts at b[i] (a quote) as Valid
// does, returning the index just after its closing quote.
func ValidString(b []byte, i int) (end int, ok bool) {
	v := validator{b: b}
	return v.str(i)
}
