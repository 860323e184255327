package jsonl

import (
	"errors"
	"fmt"
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

func TestNumbered(t *testing.T) {
	in := "a\n\n" + strings.Repeat("x", 20) + "\n  b\r\nc"
	var got []string
	for l, err := range Numbered(strings.NewReader(in), 8) {
		switch {
		case errors.Is(err, ErrLineTooLong):
			got = append(got, fmt.Sprintf("%d:too long", l.Number))
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, fmt.Sprintf("%d:%s", l.Number, l.Text))
		}
	}
	if s := strings.Join(got, " "); s != "1:a 3:too long 4:b 5:c" {
		t.Fatalf("got %s", s)
	}
}

// FuzzNumbered: whatever the input, lines come in order with increasing
// numbers, never above the input's line count, each within the bound and
// trimmed, and the text of every non-blank short line is yielded.
func FuzzNumbered(f *testing.F) {
	f.Add("a\n\nb", 4)
	f.Add("\n\n  x  \r\n"+strings.Repeat("y", 100), 16)
	f.Fuzz(func(t *testing.T, in string, max int) {
		if max < 1 || max > 1<<20 {
			return
		}
		physical := strings.Split(in, "\n")
		last := 0
		for l, err := range Numbered(strings.NewReader(in), max) {
			if err != nil && !errors.Is(err, ErrLineTooLong) {
				t.Fatal(err)
			}
			if l.Number <= last || l.Number > len(physical) {
				t.Fatalf("line number %d after %d, input has %d lines", l.Number, last, len(physical))
			}
			last = l.Number
			src := physical[l.Number-1]
			if err != nil {
				if len(src)+1 <= max {
					t.Fatalf("line %d (%d bytes) reported too long for %d", l.Number, len(src), max)
				}
				continue
			}
			if string(l.Text) != strings.TrimSpace(src) || len(l.Text) == 0 {
				t.Fatalf("line %d: got %q from %q", l.Number, l.Text, src)
			}
		}
	})
}
