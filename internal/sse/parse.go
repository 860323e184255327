package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
)

// DefaultMaxEventBytes bounds one event block when the caller gives no limit.
// Model streams send small deltas; a block this large means a broken or
// hostile upstream.
const DefaultMaxEventBytes = 4 << 20

// ErrEventTooLarge is returned (wrapped) when one event block exceeds the
// parser's limit.
var ErrEventTooLarge = errors.New("sse: event exceeds the size limit")

const readChunk = 32 << 10

// Read buffers are pooled: a relay parses one stream per request.
const maxPooledBuf = 256 << 10

var bufPool sync.Pool

// Parse returns an iterator over the event blocks of r. Every block is
// yielded, including comment-only blocks (Data empty), so a relay can forward
// upstream keepalives; consumers that only want payloads skip events with
// empty Data. A block still open at EOF is discarded, as the WHATWG
// algorithm requires.
//
// The yielded Event's Data and Raw alias internal buffers and are valid only
// until the next iteration (or, after a break, for good); use Event.Clone to
// keep one longer. A read error other
// than io.EOF, or a block larger than maxEventBytes (DefaultMaxEventBytes when
// <= 0), is yielded once as the error and ends the iteration.
func Parse(r io.Reader, maxEventBytes int) iter.Seq2[Event, error] {
	if maxEventBytes <= 0 {
		maxEventBytes = DefaultMaxEventBytes
	}
	return func(yield func(Event, error) bool) {
		p := parser{r: r, max: maxEventBytes}
		if bp, ok := bufPool.Get().(*[]byte); ok {
			p.buf = (*bp)[:0]
		}
		for {
			ev, err := p.next()
			if err == io.EOF {
				p.release()
				return
			}
			if !yield(ev, err) {
				// The caller broke out and may still hold ev: leave the
				// buffer to it (and the GC).
				return
			}
			if err != nil {
				p.release()
				return
			}
		}
	}
}

// parser holds the read buffer. buf[start:] is unconsumed input; a block
// being assembled always starts at buf[start] so Raw can be a sub-slice.
type parser struct {
	r     io.Reader
	max   int
	buf   []byte
	start int // first byte of the current block
	pos   int // first byte not yet split into lines
	eof   bool
	bom   bool // leading BOM already handled
	data  []byte
	name  string
	id    string
	// lastName caches the previous event name.
	lastName string
}

// release returns the read buffer to the pool once no yielded event can
// alias it any more.
func (p *parser) release() {
	if cap(p.buf) <= maxPooledBuf {
		b := p.buf[:0]
		bufPool.Put(&b)
	}
	p.buf = nil
}

// fill reads more input, compacting the buffer so the current block stays
// contiguous. It returns io.EOF when the reader is exhausted.
func (p *parser) fill() error {
	if p.eof {
		return io.EOF
	}
	if p.start > 0 {
		n := copy(p.buf, p.buf[p.start:])
		p.pos -= p.start
		p.start = 0
		p.buf = p.buf[:n]
	}
	if cap(p.buf)-len(p.buf) < readChunk {
		nb := make([]byte, len(p.buf), 2*cap(p.buf)+readChunk)
		copy(nb, p.buf)
		p.buf = nb
	}
	n, err := p.r.Read(p.buf[len(p.buf):cap(p.buf)])
	p.buf = p.buf[:len(p.buf)+n]
	if err == io.EOF {
		p.eof = true
		if n == 0 {
			return io.EOF
		}
		return nil
	}
	if err != nil {
		return err
	}
	// (0, nil) is "try again", as bufio treats it.
	return nil
}

// lineEnd returns the index of the first CR or LF in b, or -1: two
// word-wide scans, where bytes.IndexAny would test one byte at a time.
func lineEnd(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	before := b
	if lf >= 0 {
		before = b[:lf]
	}
	if cr := bytes.IndexByte(before, '\r'); cr >= 0 {
		return cr
	}
	return lf
}

// line returns the next line (without its terminator). ok is false at EOF
// with no complete line left.
func (p *parser) line() (line []byte, err error) {
	for {
		rest := p.buf[p.pos:]
		if i := lineEnd(rest); i >= 0 {
			if rest[i] == '\r' && i+1 == len(rest) && !p.eof {
				// CR at the end of the data read so far: it may be
				// the first half of CRLF. Read on before deciding.
				if err := p.fill(); err != nil && err != io.EOF {
					return nil, err
				}
				continue
			}
			end := i + 1
			if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
				end++
			}
			p.pos += end
			return rest[:i], nil
		}
		// No terminator in sight: everything from the block's start is
		// one unfinished block.
		if len(p.buf)-p.start > p.max {
			return nil, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, p.max)
		}
		if err := p.fill(); err != nil {
			return nil, err
		}
	}
}

func (p *parser) next() (Event, error) {
	p.data = p.data[:0]
	p.id = ""
	p.name = ""
	p.start = p.pos
	lines := 0
	hasData := false
	for {
		ln, err := p.line()
		if err != nil {
			// io.EOF here discards an unterminated block (WHATWG).
			return Event{}, err
		}
		if !p.bom {
			p.bom = true
			ln = bytes.TrimPrefix(ln, []byte("\xef\xbb\xbf"))
		}
		if len(ln) == 0 {
			if lines == 0 {
				// Stray blank line between blocks: not an event.
				p.start = p.pos
				continue
			}
			data := p.data
			if hasData {
				data = data[:len(data)-1] // drop the last "\n"
			}
			return Event{Name: p.name, ID: p.id, Data: data, Raw: p.buf[p.start:p.pos]}, nil
		}
		lines++
		if ln[0] == ':' {
			continue
		}
		field, value := ln, []byte(nil)
		if i := bytes.IndexByte(ln, ':'); i >= 0 {
			field, value = ln[:i], ln[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			p.data = append(p.data, value...)
			p.data = append(p.data, '\n')
			hasData = true
		case "event":
			// Reuse the previous name's string: streams repeat a
			// handful of names, and this saves an allocation per event.
			if string(value) != p.lastName {
				p.lastName = string(value)
			}
			p.name = p.lastName
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.id = string(value)
			}
		}
		if p.pos-p.start > p.max {
			return Event{}, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, p.max)
		}
	}
}
