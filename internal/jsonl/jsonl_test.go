package jsonl

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func collect(t *testing.T, r io.Reader, max int) (lines []string, tooLong int, err error) {
	t.Helper()
	for line, e := range Lines(r, max) {
		switch {
		case errors.Is(e, ErrLineTooLong):
			tooLong++
		case e != nil:
			return lines, tooLong, e
		default:
			lines = append(lines, string(line))
		}
	}
	return lines, tooLong, nil
}

func TestLines(t *testing.T) {
	huge := strings.Repeat("x", 200<<10) // spans several buffer fills
	in := "a\n\n  \r\n " + huge + "\n" + strings.Repeat("y", 10) + "\n  b  \nc"
	lines, tooLong, err := collect(t, strings.NewReader(in), 8)
	if err != nil || tooLong != 2 || strings.Join(lines, "|") != "a|b|c" {
		t.Fatalf("lines %q, too long %d, err %v", lines, tooLong, err)
	}
	lines, tooLong, err = collect(t, strings.NewReader(in), 1<<20)
	if err != nil || tooLong != 0 || len(lines) != 5 || lines[1] != huge {
		t.Fatalf("%d lines, too long %d, err %v", len(lines), tooLong, err)
	}
}

func TestLinesReadError(t *testing.T) {
	boom := errors.New("boom")
	lines, _, err := collect(t, io.MultiReader(strings.NewReader("a\n"), iotest.ErrReader(boom)), 8)
	if !errors.Is(err, boom) || len(lines) != 1 {
		t.Fatalf("lines %q, err %v", lines, err)
	}
}
