package toolexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// clawIDParam is the placeholder and argument that carries the agent's
// identity. Its value is always the authenticated agent id, never the
// model's (spec 000 "Path placeholders").
const clawIDParam = "claw_id"

// argError is a problem with the model's arguments: it becomes
// invalid_arguments / -32602 and the service is not called.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

func argErrorf(format string, a ...any) error { return &argError{fmt.Sprintf(format, a...)} }

// decodeArguments parses the model's arguments. They must be one JSON
// object; empty input and null mean {}. Numbers stay json.Number so they
// reach the service exactly as the model wrote them.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	if raw[0] != '{' {
		return nil, argErrorf("arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil {
		return nil, argErrorf("arguments are not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, argErrorf("arguments must be a single JSON object")
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

// forceClawID sets claw_id to the agent id whenever the schema declares it
// or the model supplied it, so the model can never choose whose identity a
// call carries. Any other spelling of it the model wrote (CLAW_ID, clawId,
// claw-id) is removed: services that bind parameters case-insensitively,
// or by camel case, would read it as the identity.
func forceClawID(args map[string]any, agentID string, declared bool) {
	for k := range args {
		if k != clawIDParam && SpellsClawID(k) {
			delete(args, k)
		}
	}
	if _, present := args[clawIDParam]; present || declared {
		args[clawIDParam] = agentID
	}
}

// SpellsClawID reports whether name is claw_id up to case and separators
// ('_', '-', '.', ' '): "claw_id", "CLAW_ID", "ClawId", "claw-id", "clawid".
func SpellsClawID(name string) bool {
	if len(name) < len("clawid") || len(name) > 4*len(clawIDParam) {
		return false
	}
	letters := strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, name)
	// strings.EqualFold folds by Unicode's simple case folding;
	// encoding/json folds each letter to upper after lower case, which
	// also takes a dotless ı for an I: a name either calls claw_id is it.
	return strings.EqualFold(letters, "clawid") || jsontop.Fold(letters) == "CLAWID"
}

// pathTemplate is a parsed execution path: its '/'-separated segments,
// each literal text and {name} placeholders in order. The template comes
// from the compiled manifest and is trusted; only placeholder values are
// escaped.
type pathTemplate struct {
	segments [][]pathPart
	// query is a static query string written in the template after '?'.
	query string
}

type pathPart struct {
	literal string
	param   string // set for a placeholder
}

// parsePathTemplate splits a template such as "/api/{id}/items/{claw_id}".
// A '{' without a closing '}' is literal text.
func parsePathTemplate(tmpl string) pathTemplate {
	var t pathTemplate
	if i := strings.IndexByte(tmpl, '?'); i >= 0 {
		tmpl, t.query = tmpl[:i], tmpl[i+1:]
	}
	for _, seg := range strings.Split(tmpl, "/") {
		t.segments = append(t.segments, parseSegment(seg))
	}
	return t
}

func parseSegment(seg string) []pathPart {
	var parts []pathPart
	for seg != "" {
		open := strings.IndexByte(seg, '{')
		if open < 0 {
			parts = append(parts, pathPart{literal: seg})
			break
		}
		end := strings.IndexByte(seg[open:], '}')
		if end < 0 {
			parts = append(parts, pathPart{literal: seg})
			break
		}
		end += open
		name := seg[open+1 : end]
		if name == "" || strings.ContainsRune(name, '{') {
			// Not a placeholder: keep "{" as text and look further on.
			parts = append(parts, pathPart{literal: seg[:open+1]})
			seg = seg[open+1:]
			continue
		}
		if open > 0 {
			parts = append(parts, pathPart{literal: seg[:open]})
		}
		parts = append(parts, pathPart{param: name})
		seg = seg[end+1:]
	}
	return parts
}

// params lists the placeholder names in order of appearance.
func (t pathTemplate) params() []string {
	var names []string
	for _, seg := range t.segments {
		for _, p := range seg {
			if p.param != "" {
				names = append(names, p.param)
			}
		}
	}
	return names
}

// fill renders the path. Each placeholder value is escaped to stay inside
// its segment: '/', '?', '#' and '%' are escaped, so a value can never add a
// segment, a query or a fragment, and a segment built from values may not
// come out as "." or "..". Empty values are refused. {claw_id} (in any
// spelling SpellsClawID accepts) is always agentID. Arguments consumed here are removed from args so they are not
// sent again in the query or body.
func (t pathTemplate) fill(args map[string]any, agentID string) (string, error) {
	var b strings.Builder
	for i, seg := range t.segments {
		if i > 0 {
			b.WriteByte('/')
		}
		var raw strings.Builder // the segment's unescaped text
		var names []string
		for _, p := range seg {
			if p.param == "" {
				b.WriteString(p.literal)
				raw.WriteString(p.literal)
				continue
			}
			names = append(names, p.param)
			var val string
			if SpellsClawID(p.param) {
				val = agentID
				if val == "" {
					return "", argErrorf("no authenticated agent id for {claw_id}")
				}
			} else {
				v, ok := args[p.param]
				if !ok {
					return "", argErrorf("missing argument %q for the path", p.param)
				}
				s, err := segmentValue(v)
				if err != nil {
					return "", argErrorf("argument %q: %v", p.param, err)
				}
				val = s
			}
			if val == "" {
				return "", argErrorf("argument %q: must not be empty", p.param)
			}
			b.WriteString(url.PathEscape(val))
			raw.WriteString(val)
		}
		if names != nil && (raw.String() == "." || raw.String() == "..") {
			return "", argErrorf("argument %q: the path segment %q is not allowed", strings.Join(names, `", "`), raw.String())
		}
	}
	for _, name := range t.params() {
		delete(args, name)
	}
	return b.String(), nil
}

// scalarText renders a string, number or boolean argument as text; ok is
// false for anything else.
func scalarText(v any) (text string, ok bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		if v {
			return "true", true
		}
		return "false", true
	}
	return "", false
}

// segmentValue renders a scalar argument for a path segment.
func segmentValue(v any) (string, error) {
	if s, ok := scalarText(v); ok {
		return s, nil
	}
	if v == nil {
		return "", errors.New("must not be null")
	}
	return "", errors.New("must be a string, number or boolean")
}

// encodeQuery renders the remaining arguments as a query string: scalars as
// text, arrays as repeated keys, objects (and nested arrays) as JSON; nulls
// are left out. Keys are sorted so the same arguments give the same URL.
func encodeQuery(args map[string]any, static string) (string, error) {
	q := url.Values{}
	for k, v := range args {
		switch v := v.(type) {
		case nil:
		case []any:
			for _, item := range v {
				s, err := queryValue(item)
				if err != nil {
					return "", argErrorf("argument %q: %v", k, err)
				}
				q.Add(k, s)
			}
		default:
			s, err := queryValue(v)
			if err != nil {
				return "", argErrorf("argument %q: %v", k, err)
			}
			q.Add(k, s)
		}
	}
	enc := q.Encode()
	switch {
	case static == "":
		return enc, nil
	case enc == "":
		return static, nil
	default:
		return static + "&" + enc, nil
	}
}

// queryValue renders a query argument: scalars as text, null as "null",
// anything else as JSON.
func queryValue(v any) (string, error) {
	if s, ok := scalarText(v); ok {
		return s, nil
	}
	if v == nil {
		return "null", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// encodeBody renders the remaining arguments as the JSON request body,
// wrapped under bodyKey when it is set.
func encodeBody(args map[string]any, bodyKey string) ([]byte, error) {
	var v any = args
	if bodyKey != "" {
		v = map[string]any{bodyKey: args}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
