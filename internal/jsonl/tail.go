package jsonl

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// The writing side's rule, for every append-only line log cllama owns
// (session history, the record of stored responses' owners): a line is
// acknowledged only once the write(2) that holds it, newline included, has
// returned. Whatever follows the file's last newline was never
// acknowledged: a write a crash (kill -9, OOM kill, power loss) cut short.
// The process that opens the file to append cuts it off with CutTornTail
// before its first write, and reports the Cut, so every line of the file
// stays a whole line and no reader (log shipper, jq) meets a torn one.

// AppendFile is what CutTornTail needs of a file open for appending
// (*os.File implements it).
type AppendFile interface {
	io.ReaderAt
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	Name() string
}

// Cut is what CutTornTail did to a file.
type Cut struct {
	// Path is the file's name, as it was opened.
	Path string
	// Offset is where the file now ends: just after its last newline (0
	// when it holds none).
	Offset int64
	// Bytes is how many bytes were cut off from Offset on; 0 when the file
	// already ended with a whole line (or was empty) and was left alone.
	Bytes int64
}

// String says what was cut, for a log line.
func (c Cut) String() string {
	return fmt.Sprintf("%s: cut a partial last line (%d bytes at offset %d)", c.Path, c.Bytes, c.Offset)
}

// tailChunk is how much of the file CutTornTail reads at a time, from the
// end back, looking for the last newline.
const tailChunk = 64 << 10

// CutTornTail makes f end with a whole line: it truncates f just after its
// last newline, cutting off a partial last line, and returns the Cut
// (Bytes 0 when there was nothing to cut). It reads f back from the end
// only as far as that newline. On error f is unchanged, or at worst
// already cut (the truncation's error is returned).
func CutTornTail(f AppendFile) (Cut, error) {
	c := Cut{Path: f.Name()}
	fi, err := f.Stat()
	if err != nil {
		return c, err
	}
	size := fi.Size()
	end, err := lastLineEnd(f, size)
	if err != nil {
		return c, err
	}
	c.Offset = end
	if end == size {
		return c, nil
	}
	if err := f.Truncate(end); err != nil {
		return c, fmt.Errorf("cutting a partial last line off %s: %w", c.Path, err)
	}
	c.Bytes = size - end
	return c, nil
}

// lastLineEnd is the offset just after the last newline among f's first
// size bytes, or 0 when they hold none.
func lastLineEnd(f io.ReaderAt, size int64) (int64, error) {
	var buf []byte
	for end := size; end > 0; {
		n := min(end, tailChunk)
		if buf == nil {
			buf = make([]byte, n)
		}
		b := buf[:n]
		if _, err := f.ReadAt(b, end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}
