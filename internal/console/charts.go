package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// timeline lays a turn's tool calls out in time: rounds one after the
// other, each call from its start to its end within its round.
type timeline struct {
	Width, Height int
	Bars          []bar
	TotalMS       int64
}

type bar struct {
	Round     int
	Label     string
	X, Y, W   int
	Failed    bool
	LatencyMS int64
}

const (
	timelineWidth = 640
	rowHeight     = 18
	labelWidth    = 180
)

func buildTimeline(e *history.Entry) timeline {
	type span struct {
		round      int
		name       string
		start, end int64
		failed     bool
	}
	var spans []span
	var offset int64
	for _, r := range e.ToolTrace {
		var roundEnd int64
		for i, c := range r.ToolCalls {
			start := int64(0)
			if c.StartMS != nil {
				start = *c.StartMS
			} else if i > 0 {
				start = roundEnd // sequential when the start was not recorded
			}
			end := start + max(c.LatencyMS, 0)
			roundEnd = max(roundEnd, end)
			spans = append(spans, span{r.Round, c.Name, offset + start, offset + end, callFailed(c.Result)})
		}
		offset += roundEnd
	}
	tl := timeline{Width: timelineWidth, TotalMS: offset}
	scale := float64(timelineWidth-labelWidth-10) / float64(max(offset, 1))
	for i, s := range spans {
		w := max(int(float64(s.end-s.start)*scale), 2)
		tl.Bars = append(tl.Bars, bar{Round: s.round, Label: fmt.Sprintf("r%d %s", s.round, s.name),
			X: labelWidth + int(float64(s.start)*scale), Y: i * rowHeight, W: w, Failed: s.failed, LatencyMS: s.end - s.start})
	}
	tl.Height = max(len(spans)*rowHeight, rowHeight)
	return tl
}

// callFailed reads a result envelope's "ok": false.
func callFailed(result []byte) bool {
	return bytes.Contains(result, []byte(`"ok":false`))
}

var svgFuncs = template.FuncMap{"time": func(t time.Time) string { return t.UTC().Format("15:04") }}

// Charts are images (an <img> runs no script, whatever the SVG holds);
// their text is escaped all the same.
var requestsSVG = template.Must(template.New("r").Funcs(svgFuncs).Parse(`<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="sans-serif" font-size="11">
<rect width="{{.W}}" height="{{.H}}" fill="#fff"/>
<text x="8" y="14" fill="#333">{{.Title}} (max {{.Max}}/{{.Unit}})</text>
{{range .Bars}}<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" fill="#4a7bd0"><title>{{time .At}}: {{.N}} requests</title></rect>{{if .EH}}<rect x="{{.X}}" y="{{.EY}}" width="{{.W}}" height="{{.EH}}" fill="#d04a4a"><title>{{.E}} errors</title></rect>{{end}}
{{end}}<line x1="0" y1="{{.Base}}" x2="{{.W}}" y2="{{.Base}}" stroke="#999"/>
<text x="8" y="{{.H}}" dy="-3" fill="#666">{{time .From}}</text><text x="{{.W}}" dx="-40" y="{{.H}}" dy="-3" fill="#666">now</text>
<rect x="{{.LegendX}}" y="5" width="10" height="10" fill="#4a7bd0"/><text x="{{.LegendX}}" dx="14" y="14">requests</text>
<rect x="{{.LegendX}}" dx="80" y="5" width="10" height="10" fill="#d04a4a" transform="translate(80 0)"/><text x="{{.LegendX}}" dx="94" y="14">errors</text>
</svg>`))

var spendSVG = template.Must(template.New("s").Funcs(svgFuncs).Parse(`<svg xmlns="http://www.w3.org/2000/svg" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="sans-serif" font-size="11">
<rect width="{{.W}}" height="{{.H}}" fill="#fff"/>
<text x="8" y="14" fill="#333">Spend per agent per hour, last 24h (max {{.Max}})</text>
{{if not .Lines}}<text x="8" y="60" fill="#666">No costs recorded in the last 24 hours.</text>{{end}}
{{range .Lines}}<polyline fill="none" stroke="{{.Color}}" stroke-width="2" points="{{.Points}}"><title>{{.Agent}}: {{.Total}}</title></polyline>
{{end}}{{range $i, $l := .Lines}}<rect x="{{$.LegendX}}" y="{{$l.LegendY}}" width="10" height="10" fill="{{$l.Color}}"/><text x="{{$.LegendX}}" dx="14" y="{{$l.LegendY}}" dy="9">{{$l.Agent}} {{$l.Total}}</text>
{{end}}<line x1="0" y1="{{.Base}}" x2="{{.PlotW}}" y2="{{.Base}}" stroke="#999"/>
</svg>`))

const (
	chartW, chartH = 640, 180
	chartTop       = 22
	chartBottom    = 16
)

type reqBar struct {
	X, Y, W, H, EY, EH, N, E int
	At                       time.Time
}

func (c *Console) requestsChart(w http.ResponseWriter, r *http.Request, _ *session) {
	agent := r.URL.Query().Get("agent")
	if agent != "" && !manifest.ValidAgentID(agent) {
		http.Error(w, "bad agent", http.StatusBadRequest)
		return
	}
	const buckets, bucket = 60, time.Minute
	now := c.opts.Now().UTC()
	from := now.Truncate(bucket).Add(-(buckets - 1) * bucket)
	counts := make([]struct{ n, e int }, buckets)
	if x := c.opts.Index; x != nil {
		series, err := x.Series(r.Context(), agent, from)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		for _, b := range series {
			if i := int(b.Start.Sub(from) / bucket); i >= 0 && i < buckets {
				counts[i].n, counts[i].e = b.Requests, b.Errors
			}
		}
	}
	peak := 1
	for _, k := range counts {
		peak = max(peak, k.n)
	}
	base, plotH := chartH-chartBottom, chartH-chartBottom-chartTop
	bw := chartW / buckets
	d := struct {
		W, H, Max, Base, LegendX int
		Unit, Title              string
		From                     time.Time
		Bars                     []reqBar
	}{W: chartW, H: chartH, Max: peak, Base: base, LegendX: chartW - 170, Unit: "min", From: from, Title: "Requests and errors per minute, last hour"}
	if agent != "" {
		d.Title = agent + ": requests and errors per minute, last hour"
	}
	for i, k := range counts {
		if k.n == 0 {
			continue
		}
		h := max(k.n*plotH/peak, 1)
		eh := 0
		if k.e > 0 {
			eh = max(k.e*plotH/peak, 1)
		}
		d.Bars = append(d.Bars, reqBar{X: i * bw, Y: base - h, W: max(bw-1, 1), H: h, EY: base - eh, EH: eh, N: k.n, E: k.e, At: from.Add(time.Duration(i) * bucket)})
	}
	writeSVG(w, requestsSVG, d)
}

var palette = []string{"#4a7bd0", "#d08a4a", "#4ab07b", "#a04ad0", "#d04a6a", "#4ab0c0", "#8a8a30", "#606060"}

// maxSpendLines bounds the agents drawn: the biggest spenders.
const maxSpendLines = 8

type spendLine struct {
	Agent, Color, Points, Total string
	LegendY                     int
	micros                      int64
}

func (c *Console) spendChart(w http.ResponseWriter, r *http.Request, _ *session) {
	const buckets, bucket = 24, time.Hour
	now := c.opts.Now().UTC()
	from := now.Truncate(bucket).Add(-(buckets - 1) * bucket)
	plotW := chartW - 190
	d := struct {
		W, H, Base, PlotW, LegendX int
		Max                        string
		Lines                      []spendLine
	}{W: chartW, H: chartH, Base: chartH - chartBottom, PlotW: plotW, LegendX: plotW + 10}
	var series map[string]map[time.Time]int64
	if x := c.opts.Index; x != nil {
		var err error
		if series, err = x.SpendSeries(r.Context(), from); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	var peak int64 = 1
	for a, m := range series {
		l := spendLine{Agent: a}
		for _, v := range m {
			l.micros += v
			peak = max(peak, v)
		}
		d.Lines = append(d.Lines, l)
	}
	sort.Slice(d.Lines, func(i, j int) bool {
		if d.Lines[i].micros != d.Lines[j].micros {
			return d.Lines[i].micros > d.Lines[j].micros
		}
		return d.Lines[i].Agent < d.Lines[j].Agent
	})
	if len(d.Lines) > maxSpendLines {
		d.Lines = d.Lines[:maxSpendLines]
	}
	plotH := chartH - chartBottom - chartTop
	step := float64(plotW) / float64(buckets-1)
	for i := range d.Lines {
		l := &d.Lines[i]
		var pts bytes.Buffer
		for k := range buckets {
			v := series[l.Agent][from.Add(time.Duration(k)*bucket)]
			fmt.Fprintf(&pts, "%.1f,%d ", float64(k)*step, d.Base-int(v*int64(plotH)/peak))
		}
		l.Points, l.Color, l.Total, l.LegendY = pts.String(), palette[i], usd(l.micros), chartTop+i*16
	}
	d.Max = usd(peak)
	writeSVG(w, spendSVG, d)
}

func writeSVG(w http.ResponseWriter, t *template.Template, d any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = w.Write(buf.Bytes())
}
