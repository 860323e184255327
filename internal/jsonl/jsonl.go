// Package jsonl reads line-oriented logs (JSON lines: cllama's audit
// trail, session history) tolerantly: each line is bounded, and a line
// over the bound is reported and skipped rather than read into memory or
// treated as fatal. It splits lines; decoding them, and deciding what a
// malformed one means, is the caller's.
//
// On the writing side it owns one rule for every append-only line log
// cllama keeps: a partial last line is cut off when the file is opened to
// append (CutTornTail), so the file holds whole lines only.
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"iter"
)

// ErrLineTooLong is yielded in place of a line longer than the limit;
// reading goes on with the next line.
var ErrLineTooLong = errors.New("line too long")

// Lines yields the non-blank lines of r in order, surrounding white space
// trimmed. A yielded line is only valid until the next one is read. A line
// of more than max bytes (its newline included) yields ErrLineTooLong and
// is skipped, holding at most about max bytes meanwhile; any other error
// is a read failure, yielded last.
func Lines(r io.Reader, max int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for l, err := range Numbered(r, max) {
			if !yield(l.Text, err) {
				return
			}
		}
	}
}

// Line is one line of a log.
type Line struct {
	// Number is the line's 1-based position in the input, blank lines
	// counted, so a reader can point at a line it skipped.
	Number int
	// Text is the line, surrounding white space trimmed; nil with
	// ErrLineTooLong.
	Text []byte
}

// Numbered is Lines with each line's number. With ErrLineTooLong the Line
// carries the number of the line skipped; with a read failure, zero.
func Numbered(r io.Reader, max int) iter.Seq2[Line, error] {
	return func(yield func(Line, error) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		var long []byte
		tooLong := false
		n := 0
		for {
			chunk, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				if !tooLong {
					long = append(long, chunk...)
					if len(long) > max {
						long, tooLong = nil, true
					}
				}
				continue
			}
			if err != nil && err != io.EOF {
				yield(Line{}, err)
				return
			}
			line := chunk
			if long != nil {
				line = append(long, chunk...)
			}
			if err == io.EOF && len(line) == 0 && !tooLong {
				return // the input ended with a newline
			}
			n++
			if tooLong || len(line) > max {
				if !yield(Line{Number: n}, ErrLineTooLong) {
					return
				}
			} else if line = bytes.TrimSpace(line); len(line) > 0 && !yield(Line{Number: n, Text: line}, nil) {
				return
			}
			long, tooLong = nil, false
			if err == io.EOF {
				return
			}
		}
	}
}
