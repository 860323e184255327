package capability

import (
	"errors"
	"fmt"
)

// FieldError is a descriptor error at one field, so callers can report the
// key separately from the problem.
type FieldError struct {
	// Field is the key path, for example "tools[1].http.path"; empty for
	// errors about the document as a whole.
	Field string
	// Problem says what is wrong and, where useful, which tool or feed.
	Problem string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Problem
	}
	return e.Field + ": " + e.Problem
}

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// prefixField prepends prefix to a FieldError's field (other errors are
// wrapped as a FieldError at prefix).
func prefixField(prefix string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: prefix + fe.Field, Problem: fe.Problem}
	}
	return &FieldError{Field: prefix, Problem: err.Error()}
}
