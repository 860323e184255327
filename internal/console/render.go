package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageNames are the templates, each executed inside the layout.
var pageNames = []string{"login", "home", "agent", "turn", "tools", "approvals", "feeds", "error"}

type pages struct {
	t map[string]*template.Template
}

// view is what every page template gets.
type view struct {
	Title  string
	Pod    string
	Nav    string // the nav entry to mark
	CSRF   string
	Authed bool
	Now    time.Time
	Data   any
}

func parsePages() (*pages, error) {
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		p.t[name] = t
	}
	return p, nil
}

func (c *Console) render(w http.ResponseWriter, status int, name string, v *view) {
	if v.Now.IsZero() {
		v.Now = c.opts.Now().UTC()
	}
	var buf bytes.Buffer
	if err := c.pages.t[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		http.Error(w, "rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (c *Console) fail(w http.ResponseWriter, s *session, status int, msg string) {
	v := &view{Title: http.StatusText(status), Pod: c.opts.Pod, Authed: s != nil, Data: msg}
	if s != nil {
		v.CSRF = s.csrf
	}
	c.render(w, status, "error", v)
}

func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := fs.ReadFile(staticFS, "static/"+path.Base(name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(b)
}

// maxShownBytes bounds one body shown on a page; the rest is cut with a
// note (the history file has it whole).
const maxShownBytes = 256 << 10

var funcs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"ago": ago,
	"usd": usd,
	"usdp": func(p *int64) string {
		if p == nil {
			return ""
		}
		return usd(*p)
	},
	"pretty": pretty,
	"ms":     func(v int64) string { return strconv.FormatInt(v, 10) + " ms" },
	"deref": func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	},
	"join": strings.Join,
	"add":  func(a, b int) int { return a + b },
}

// ago renders how long before now t was.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h ago"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d ago"
}

// usd renders micro-USD as dollars, exactly.
func usd(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	frac := fmt.Sprintf("%06d", micros%1_000_000)
	frac = strings.TrimRight(frac, "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return sign + "$" + strconv.FormatInt(micros/1_000_000, 10) + "." + frac
}

// pretty indents a JSON body for reading, bounded: the template escapes
// whatever it holds.
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	src := raw
	if json.Indent(&buf, raw, "", "  ") == nil {
		src = unescapeHTML(buf.Bytes())
	}
	if len(src) > maxShownBytes {
		n := maxShownBytes
		for n > 0 && !utf8.RuneStart(src[n]) {
			n--
		}
		return string(src[:n]) + fmt.Sprintf("\n… cut at %d KiB of %d KiB: the history file has it whole", maxShownBytes>>10, len(src)>>10)
	}
	return string(src)
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes encoding/json
// writes back into the characters, so a reader sees what the model wrote
// (the page escapes them as it renders; the JSON stays valid).
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c", "003C":
				out, i = append(out, '<'), i+5
				continue
			case "003e", "003E":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1 // an escape pair, whole
	}
	return out
}
