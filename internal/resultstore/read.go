package resultstore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// ToolName is the canonical name of the built-in tool that reads a
// handle. It is presented under each format's provider-safe name, like
// every tool (internal/toolname).
const ToolName = "claw.read_result"

// ToolDescription and ToolSchema are the tool's definition.
const ToolDescription = "Read part of a tool result that was too large to show whole. A result that was cut says truncated: true and carries a result_handle. " +
	"Pass {handle, offset, length} to read bytes offset..offset+length of the full result, or {handle, grep} to find the lines holding a substring " +
	"(or an RE2 regular expression with regex: true), each with the byte offset where its line starts, and context_lines lines around each (at most 10). " +
	"A search starts at offset (default 0) and, when it stops early, says complete: false and next_offset to continue from."

// ToolSchema is the tool's inputSchema.
var ToolSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"handle":{"type":"string","description":"the result_handle of a truncated result"},` +
	`"offset":{"type":"integer","minimum":0,"description":"byte offset to read (or search) from; default 0"},` +
	`"length":{"type":"integer","minimum":1,"description":"bytes to read; default and most: what fits one answer"},` +
	`"grep":{"type":"string","description":"substring (or RE2 pattern with regex: true) to find; answers matching lines"},` +
	`"regex":{"type":"boolean","description":"grep is an RE2 regular expression"},` +
	`"context_lines":{"type":"integer","minimum":0,"maximum":10,"description":"lines shown before and after each match"}},` +
	`"required":["handle"],"additionalProperties":false}`)

// Bounds of one read.
const (
	// MaxPattern bounds grep's length.
	MaxPattern = 1024
	// MaxContextLines bounds context_lines.
	MaxContextLines = 10
	// MaxMatches bounds the matches of one answer.
	MaxMatches = 100
	// MaxLineText bounds the text of one line in an answer: a longer line
	// is shown as a window around its match.
	MaxLineText = 512
	// linePiece is the longest line searched whole: a longer one is
	// searched in pieces of this size (a match across two pieces is not
	// found).
	linePiece = 64 << 10
	// answerOverhead is room kept for an answer's members besides its text.
	answerOverhead = 256
)

// Args are claw.read_result's arguments: a range (Grep empty) or a search.
type Args struct {
	Handle       string
	Offset       int64
	Length       int64
	Grep         string
	Regex        bool
	ContextLines int
}

// ErrArgs are invalid arguments; the message says which and why.
var ErrArgs = errors.New("invalid arguments")

// ParseArgs decodes claw.read_result's arguments (a JSON object). Members
// are matched exactly: an unknown one (another spelling included) is an
// error, not ignored.
func ParseArgs(raw []byte) (Args, error) {
	var a Args
	m, err := wire.DecodeObject(raw)
	if err != nil {
		return a, fmt.Errorf("%w: arguments must be a JSON object", ErrArgs)
	}
	for k, v := range m {
		var err error
		switch k {
		case "handle":
			err = json.Unmarshal(v, &a.Handle)
		case "offset":
			err = json.Unmarshal(v, &a.Offset)
			if err == nil && a.Offset < 0 {
				err = errors.New("must be >= 0")
			}
		case "length":
			err = json.Unmarshal(v, &a.Length)
			if err == nil && a.Length <= 0 {
				err = errors.New("must be > 0")
			}
		case "grep":
			err = json.Unmarshal(v, &a.Grep)
			if err == nil && (a.Grep == "" || len(a.Grep) > MaxPattern) {
				err = fmt.Errorf("must be 1 to %d bytes", MaxPattern)
			}
		case "regex":
			err = json.Unmarshal(v, &a.Regex)
		case "context_lines":
			err = json.Unmarshal(v, &a.ContextLines)
			if err == nil && (a.ContextLines < 0 || a.ContextLines > MaxContextLines) {
				err = fmt.Errorf("must be 0 to %d", MaxContextLines)
			}
		default:
			return a, fmt.Errorf("%w: unknown argument %q (handle, offset, length, grep, regex, context_lines)", ErrArgs, trimName(k))
		}
		if err != nil {
			return a, fmt.Errorf("%w: %s: %v", ErrArgs, k, plain(err))
		}
	}
	switch {
	case a.Handle == "":
		return a, fmt.Errorf("%w: handle is required (the result_handle of a truncated result)", ErrArgs)
	case a.Grep != "" && a.Length != 0:
		return a, fmt.Errorf("%w: give length (read a range) or grep (search), not both", ErrArgs)
	case a.Grep == "" && (a.Regex || a.ContextLines != 0):
		return a, fmt.Errorf("%w: regex and context_lines go with grep", ErrArgs)
	}
	return a, nil
}

// plain is a JSON decoding error without Go type names.
func plain(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "wrong type (" + te.Value + ")"
	}
	return err.Error()
}

func trimName(k string) string {
	if len(k) > 64 {
		return k[:64] + "…"
	}
	return k
}

// Pattern compiles a's search: a literal substring, or RE2.
func (a Args) Pattern() (func([]byte) int, error) {
	if !a.Regex {
		lit := []byte(a.Grep)
		return func(line []byte) int { return bytes.Index(line, lit) }, nil
	}
	re, err := regexp.Compile(a.Grep)
	if err != nil {
		return nil, fmt.Errorf("%w: grep: not an RE2 pattern: %v", ErrArgs, err)
	}
	return func(line []byte) int {
		if loc := re.FindIndex(line); loc != nil {
			return loc[0]
		}
		return -1
	}, nil
}

// Answer is what a read returned: its JSON (an envelope's data) and, for
// the audit event, the bytes of the result it showed.
type Answer struct {
	Data json.RawMessage
	// Bytes is the number of the result's bytes the answer holds.
	Bytes int
}

// ReadRange answers a range read of b within budget bytes of JSON: the
// bytes from a.Offset (moved forward to a character's start) for
// a.Length (default and most: what fits), ended on a character boundary.
func ReadRange(b Body, a Args, budget int) (Answer, error) {
	size := b.Size()
	room := max(64, budget-answerOverhead)
	length := a.Length
	if length <= 0 || length > int64(room) {
		length = int64(room)
	}
	off := min(a.Offset, size)
	// A few bytes more, to find character boundaries at both ends.
	buf := make([]byte, min(length+utf8.UTFMax, size-off))
	n, err := b.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return Answer{}, err
	}
	buf = buf[:n]
	skip := 0
	for skip < len(buf) && skip < utf8.UTFMax && !utf8.RuneStart(buf[skip]) {
		skip++
	}
	off += int64(skip)
	text := buf[skip:]
	if int64(len(text)) > length {
		end := int(length)
		for end > 0 && end > int(length)-utf8.UTFMax && !utf8.RuneStart(text[end]) {
			end--
		}
		if end == 0 {
			end = int(length)
		}
		text = text[:end]
	}
	text = fitText(text, room)
	got := int64(len(text))
	out := []byte(`{"offset":`)
	out = strconv.AppendInt(out, off, 10)
	out = append(out, `,"text":`...)
	out = jsontop.AppendString(out, string(text))
	out = append(out, `,"length":`...)
	out = strconv.AppendInt(out, got, 10)
	out = append(out, `,"original_bytes":`...)
	out = strconv.AppendInt(out, size, 10)
	if next := off + got; next < size {
		out = append(out, `,"next_offset":`...)
		out = strconv.AppendInt(out, next, 10)
	} else {
		out = append(out, `,"eof":true`...)
	}
	return Answer{Data: append(out, '}'), Bytes: int(got)}, nil
}

// match is one line of a search answer.
type match struct {
	Offset  int64  `json:"offset"`
	Text    string `json:"text"`
	Context bool   `json:"context,omitempty"`
	// TextOffset is where Text starts when it is a window of a longer line.
	TextOffset *int64 `json:"text_offset,omitempty"`
}

type searchAnswer struct {
	Pattern       string  `json:"pattern"`
	Regex         bool    `json:"regex,omitempty"`
	Matches       []match `json:"matches"`
	Count         int     `json:"count"`
	Complete      bool    `json:"complete"`
	NextOffset    *int64  `json:"next_offset,omitempty"`
	OriginalBytes int64   `json:"original_bytes"`
}

// line is one line (or piece of a long line) of a search.
type line struct {
	off  int64
	text []byte
}

// Grep answers a search within budget bytes of JSON: the lines from
// a.Offset holding the pattern, each with the byte offset where it
// starts and a.ContextLines lines around it, at most MaxMatches matches.
func Grep(b Body, a Args, budget int) (Answer, error) {
	find, err := a.Pattern()
	if err != nil {
		return Answer{}, err
	}
	size := b.Size()
	start := min(a.Offset, size)
	r := bufio.NewReaderSize(io.NewSectionReader(b, start, size-start), linePiece)
	ans := searchAnswer{Pattern: a.Grep, Regex: a.Regex, Complete: true, OriginalBytes: size, Matches: []match{}}
	room := max(64, budget-answerOverhead-len(a.Grep)*6)
	used := 0
	var before []line // the last ContextLines lines, for context
	after := 0        // context lines still to show after a match
	lastShown := int64(-1)
	show := func(l line, at int, ctx bool) bool {
		if l.off <= lastShown {
			return true
		}
		m := window(l, at)
		m.Context = ctx
		cost := jsontop.StringLen(m.Text) + 48
		if used+cost > room && len(ans.Matches) == 0 && !ctx {
			// The first match must show, or a search could never get
			// past it: its text is cut to the room there is.
			m.Text = string(fitText([]byte(m.Text), max(0, room-48)))
			cost = room
		}
		if used+cost > room {
			return false
		}
		used += cost
		ans.Matches = append(ans.Matches, m)
		lastShown = l.off
		return true
	}
	off := start
	for {
		text, rerr := r.ReadSlice('\n')
		if rerr != nil && !errors.Is(rerr, bufio.ErrBufferFull) && !errors.Is(rerr, io.EOF) {
			return Answer{}, rerr
		}
		if len(text) == 0 && rerr != nil {
			break
		}
		l := line{off: off, text: bytes.TrimSuffix(text, []byte("\n"))}
		off += int64(len(text))
		at := find(l.text)
		stop := false
		switch {
		case at >= 0 && ans.Count >= MaxMatches:
			stop = true
		case at >= 0:
			for _, c := range before {
				if !show(c, -1, true) {
					stop = true
					break
				}
			}
			if !stop && !show(l, at, false) {
				stop = true
			}
			if !stop {
				ans.Count++
				before, after = before[:0], a.ContextLines
			}
		case after > 0:
			after--
			stop = !show(l, -1, true)
		}
		if stop {
			next := l.off
			ans.Complete, ans.NextOffset = false, &next
			break
		}
		if a.ContextLines > 0 && at < 0 {
			if len(before) == a.ContextLines {
				before = append(before[:0], before[1:]...)
			}
			before = append(before, line{off: l.off, text: bytes.Clone(l.text[:min(len(l.text), 2*MaxLineText)])})
		}
		if rerr != nil && !errors.Is(rerr, bufio.ErrBufferFull) {
			break
		}
	}
	data, err := json.Marshal(ans)
	return Answer{Data: data, Bytes: used}, err
}

// window is l as an answer shows it: whole when short, else MaxLineText
// bytes around its match (at, or its start), on character boundaries.
func window(l line, at int) match {
	m := match{Offset: l.off}
	if len(l.text) <= MaxLineText {
		m.Text = string(l.text)
		return m
	}
	from := max(0, at-MaxLineText/4)
	for from > 0 && !utf8.RuneStart(l.text[from]) {
		from--
	}
	to := min(len(l.text), from+MaxLineText)
	for to < len(l.text) && to > from && !utf8.RuneStart(l.text[to]) {
		to--
	}
	m.Text = string(l.text[from:to])
	to64 := l.off + int64(from)
	m.TextOffset = &to64
	return m
}

// fitText is the longest prefix of text, ended on a character boundary,
// whose JSON string encoding is at most room bytes.
func fitText(text []byte, room int) []byte {
	if jsontop.StringLen(string(text)) <= room {
		return text
	}
	lo, hi := 0, min(len(text), room) // text[:lo] fits, text[:hi+1] does not (or hi is the end)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if jsontop.StringLen(string(text[:mid])) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	end := lo
	for end > 0 && end > lo-utf8.UTFMax && !utf8.FullRune(text[lastStart(text[:end]):end]) {
		end = lastStart(text[:end])
	}
	return text[:end]
}

// lastStart is the index of the last character start in b (0 when none).
func lastStart(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return 0
}
