package pod

import (
	"errors"
	"strings"
)

// ErrInvalid marks every grammar error; test with errors.Is.
var ErrInvalid = errors.New("invalid pod")

// Error is a pod or descriptor error that names where it is and how to fix
// it. Every error the compiler reports to an operator is an *Error.
type Error struct {
	// File is the file at fault as the operator named it (claw-pod.yml or
	// a descriptor path).
	File string
	// Service is the compose service, empty for pod-level keys.
	Service string
	// Key is the key path, for example "x-claw.tools[1].allow".
	Key string
	// Problem says what is wrong.
	Problem string
	// Fix says what to do about it.
	Fix string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Service != "" {
		b.WriteString(": service \"")
		b.WriteString(e.Service)
		b.WriteString("\"")
	}
	if e.Key != "" {
		b.WriteString(": ")
		b.WriteString(e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString("; fix: ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) true for every *Error.
func (e *Error) Is(target error) bool { return target == ErrInvalid }
