package policy

import (
	"encoding/json"
	"fmt"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/snapcache"
)

// Denial says why a tool is not available: the rules that were tried (none
// held), and the error of any that failed to evaluate (which denies).
type Denial struct {
	Tool  string
	Rules []string
	Err   error
}

// Evaluator evaluates manifests' rules. Rules are compiled once per
// manifest snapshot (a reloaded manifest is a new snapshot; its old
// programs go with it). It is safe for concurrent use.
type Evaluator struct {
	cache snapcache.Cache[manifest.Tools, *compiled]
	// approve are the approval rules compiled so far.
	approve approvalPrograms
}

// NewEvaluator returns an Evaluator.
func NewEvaluator() *Evaluator { return &Evaluator{} }

// compiled is one manifest's rules, by id; a rule that does not compile
// (a tools.json not written by this claw) keeps its error and denies.
type compiled struct {
	rules map[string]*Rule
	errs  map[string]error
	// views are the manifest's tools (by their address in m.Tools) as
	// expressions see them, built once with the rules and never changed.
	// A tool from elsewhere gets a view of its own on each evaluation, so
	// the map is bounded by the manifest.
	views map[*manifest.Tool]*Tool
}

func (c *compiled) view(t *manifest.Tool) *Tool {
	if v, ok := c.views[t]; ok {
		return v
	}
	return toolView(t)
}

func (e *Evaluator) rules(m *manifest.Tools) *compiled {
	c, _ := e.cache.Get(m, func() (*compiled, error) { return compileRules(m), nil })
	return c
}

func compileRules(m *manifest.Tools) *compiled {
	c := &compiled{rules: map[string]*Rule{}, errs: map[string]error{}, views: map[*manifest.Tool]*Tool{}}
	for i := range m.Tools {
		if t := &m.Tools[i]; len(t.When) > 0 {
			c.views[t] = toolView(t)
		}
	}
	for _, r := range m.Rules {
		prg, err := Compile(r.When)
		if err != nil {
			c.errs[r.ID] = fmt.Errorf("rule %s (%s) does not compile: %w", r.ID, r.Source, err)
			continue
		}
		c.rules[r.ID] = prg
	}
	return c
}

// Request evaluates the rules of one request: results of rules that do
// not look at the tool are shared by every tool. It is for one goroutine.
type Request struct {
	c      *compiled
	in     *Input
	shared map[string]result
}

type result struct {
	ok  bool
	err error
}

// For starts the evaluation of manifest m's rules against in.
func (e *Evaluator) For(m *manifest.Tools, in Input) *Request {
	return &Request{c: e.rules(m), in: &in}
}

// Filter is For(m, in).Filter(tools): tools (m's) split into those
// available under in and the denials of the rest.
func (e *Evaluator) Filter(m *manifest.Tools, tools []*manifest.Tool, in Input) (available []*manifest.Tool, denied []Denial) {
	return e.For(m, in).Filter(tools)
}

// Allowed is For(m, in).Allowed(t): whether t (m's) is available under
// in, and otherwise why not.
func (e *Evaluator) Allowed(m *manifest.Tools, t *manifest.Tool, in Input) (bool, Denial) {
	return e.For(m, in).Allowed(t)
}

// Allowed reports whether t is available, and otherwise why not.
func (r *Request) Allowed(t *manifest.Tool) (bool, Denial) {
	if len(t.When) == 0 {
		return true, Denial{}
	}
	d := Denial{Tool: t.Name}
	var view *Tool
	for _, id := range t.When {
		d.Rules = append(d.Rules, id)
		if err := r.c.errs[id]; err != nil {
			d.Err = err
			continue
		}
		rule := r.c.rules[id]
		if rule == nil {
			d.Err = fmt.Errorf("rule %s is not in tools.json", id)
			continue
		}
		var res result
		if !rule.usesTool {
			if cached, ok := r.shared[id]; ok {
				res = cached
			} else {
				res.ok, res.err = rule.Eval(r.in, nil)
				if r.shared == nil {
					r.shared = map[string]result{}
				}
				r.shared[id] = res
			}
		} else {
			if view == nil {
				view = r.c.view(t)
			}
			res.ok, res.err = rule.Eval(r.in, view)
		}
		if res.err != nil {
			d.Err = fmt.Errorf("rule %s failed: %w", id, res.err)
			continue
		}
		if res.ok {
			return true, Denial{}
		}
	}
	return false, d
}

// Filter splits tools into those available and the denials of the rest.
func (r *Request) Filter(tools []*manifest.Tool) (available []*manifest.Tool, denied []Denial) {
	for _, t := range tools {
		if ok, d := r.Allowed(t); ok {
			available = append(available, t)
		} else {
			denied = append(denied, d)
		}
	}
	return available, denied
}

// toolView is t as an expression sees it.
func toolView(t *manifest.Tool) *Tool {
	v := &Tool{Name: t.Name, Service: t.Execution.Service, Annotations: map[string]any{}}
	if a := t.Annotations; a != nil {
		if a.Title != "" {
			v.Annotations["title"] = a.Title
		}
		set := func(k string, b *bool) {
			if b != nil {
				v.Annotations[k] = *b
			}
		}
		set("readOnly", a.ReadOnly)
		set("readOnlyHint", a.ReadOnlyHint)
		set("destructiveHint", a.DestructiveHint)
		set("idempotentHint", a.IdempotentHint)
		set("openWorldHint", a.OpenWorldHint)
		set("parallel_safe", a.ParallelSafe)
	}
	return v
}

// FeedValue is a feed body as an expression sees it: parsed JSON when it
// is JSON (an object or array, and also a bare string, number, true,
// false or null), else the text. JSON numbers are doubles, which CEL
// compares with ints (feeds.alerts.count > 3).
func FeedValue(body []byte) any {
	var v any
	if json.Unmarshal(body, &v) == nil {
		return v
	}
	return string(body)
}
