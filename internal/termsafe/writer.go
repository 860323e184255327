package termsafe

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Writer escapes a stream as Lines escapes a string: its lines and tabs
// stay, everything else special is escaped. A character cut between two
// writes, or a carriage return that a newline may follow, is held until
// the next write; Flush writes what is held. A Writer is safe for
// concurrent use (a child process's output and claw's own).
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte // at most 3 bytes: a rune's start, or "\r"
	buf  []byte
}

// NewWriter returns a Writer escaping onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p onto the underlying writer; it reports len(p) written
// unless that writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data := p
	if len(w.held) > 0 {
		data = append(append([]byte(nil), w.held...), p...)
		w.held = w.held[:0]
	}
	keep := incomplete(data)
	w.held = append(w.held, data[len(data)-keep:]...)
	if err := w.write(data[:len(data)-keep]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held, escaped as the end of the stream.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := w.held
	w.held = nil
	return w.write(held)
}

func (w *Writer) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	w.buf = appendLines(w.buf[:0], string(p))
	_, err := w.w.Write(w.buf)
	return err
}

// incomplete is how many bytes at the end of p to hold: a final "\r", or
// the start of a rune whose other bytes are still to come.
func incomplete(p []byte) int {
	if len(p) > 0 && p[len(p)-1] == '\r' {
		return 1
	}
	for k := 1; k <= utf8.UTFMax-1 && k <= len(p); k++ {
		c := p[len(p)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(p[len(p)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}
