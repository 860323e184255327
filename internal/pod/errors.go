package pod

import (
	"errors"
	"fmt"
	"sort"
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

// MaxReported bounds the errors an Errors lists; the rest are counted.
const MaxReported = 20

// Errors is every problem one run found, so an operator fixes them in one
// pass. Error lists them sorted by file, service and key, one per line,
// at most MaxReported of them.
type Errors []*Error

func (es Errors) sorted() Errors {
	out := append(Errors(nil), es...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Key < b.Key
	})
	return out
}

func (es Errors) Error() string {
	var b strings.Builder
	s := es.sorted()
	fmt.Fprintf(&b, "%d problems:", len(s))
	for i, e := range s {
		if i == MaxReported {
			fmt.Fprintf(&b, "\n  … and %d more", len(s)-MaxReported)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap gives errors.As and errors.Is the problems, first by position.
func (es Errors) Unwrap() []error {
	s := es.sorted()
	out := make([]error, len(s))
	for i, e := range s {
		out[i] = e
	}
	return out
}

// Collect adds err to es when it is an *Error (or an Errors) and reports
// whether it did; any other error is not a problem of the pod's text and
// is the caller's to return at once.
func (es *Errors) Collect(err error) bool {
	var many Errors
	if errors.As(err, &many) {
		*es = append(*es, many...)
		return true
	}
	var one *Error
	if errors.As(err, &one) {
		*es = append(*es, one)
		return true
	}
	return false
}

// Err is nil for no problem, the problem itself for one, else es.
func (es Errors) Err() error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	return es
}
