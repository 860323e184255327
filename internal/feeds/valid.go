package feeds

// validJSON reports whether b is one valid JSON value (RFC 8259), with
// surrounding white space, as json.Valid does, in one tight pass: on a long
// conversation it is the one cost of decoration that grows with the body,
// and json.Valid's byte-at-a-time state machine is several times slower.
// Nesting deeper than maxDepth is refused (encoding/json refuses to decode
// it too). FuzzValidJSON checks it against json.Valid.
func validJSON(b []byte) bool {
	i, ok := validValue(b, skipWS(b, 0), 0)
	return ok && skipWS(b, i) == len(b)
}

const maxDepth = 10000

// validValue checks the value starting at b[i] and returns the index after
// it.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{':
		return validObject(b, i, depth+1)
	case c == '[':
		return validArray(b, i, depth+1)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

func validObject(b []byte, i, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		var ok bool
		if i, ok = validString(b, i); !ok {
			return i, false
		}
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		if i, ok = validValue(b, skipWS(b, i+1), depth); !ok {
			return i, false
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func validArray(b []byte, i, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = validValue(b, i, depth); !ok {
			return i, false
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// validString checks the string starting at b[i] (a '"'): no raw control
// characters, only the escapes JSON defines. Like json.Valid it does not
// check UTF-8.
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
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

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// validNumber checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}
