package modelsim

import (
	"fmt"
	"slices"
	"strings"
)

// Match returns the rule that answers c: the first rule whose conditions
// all hold, else the default rule, else nil.
func (s *Script) Match(c *Conversation) *Rule {
	for i := range s.Rules {
		r := &s.Rules[i]
		if !r.Default && r.Match.holds(c) {
			return r
		}
	}
	if s.dflt != nil {
		return s.dflt
	}
	return nil
}

func (m *Match) holds(c *Conversation) bool {
	if m.Format != "" && m.Format != c.Format {
		return false
	}
	if m.Model != "" && m.Model != c.Model && m.Model != c.Model[strings.LastIndexByte(c.Model, '/')+1:] {
		return false
	}
	if m.UserContains != "" && !containsFold(c.LastUserText, m.UserContains) {
		return false
	}
	if m.userRe != nil && !m.userRe.MatchString(c.LastUserText) {
		return false
	}
	if m.ToolResult != nil && *m.ToolResult != (len(c.ToolResults) > 0) {
		return false
	}
	if m.ToolResultOf != "" && !slices.ContainsFunc(c.ToolResults, func(r ToolResult) bool { return r.Name != "" && addresses(m.ToolResultOf, r.Name) }) {
		return false
	}
	if m.ToolResultContains != "" && !slices.ContainsFunc(c.ToolResults, func(r ToolResult) bool { return containsFold(r.Content, m.ToolResultContains) }) {
		return false
	}
	for _, want := range m.ToolsOffered {
		if !slices.ContainsFunc(c.Tools, func(o string) bool { return addresses(want, o) }) {
			return false
		}
	}
	for _, not := range m.ToolsNotOffered {
		if slices.ContainsFunc(c.Tools, func(o string) bool { return addresses(not, o) }) {
			return false
		}
	}
	if m.SystemContains != "" && !containsFold(c.System, m.SystemContains) {
		return false
	}
	if m.ContextContains != "" && !slices.ContainsFunc(c.allText, func(t string) bool { return containsFold(t, m.ContextContains) }) {
		return false
	}
	return true
}

// describe names a request for the "no rule matched" error, so a script
// author can see what to match on.
func (c *Conversation) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no script rule matched this %s request (model %q", c.Format, c.Model)
	fmt.Fprintf(&b, ", last user text %q", clip(c.LastUserText, 120))
	if len(c.ToolResults) > 0 {
		names := make([]string, len(c.ToolResults))
		for i, r := range c.ToolResults {
			names[i] = r.Name
		}
		fmt.Fprintf(&b, ", tool results of %v", names)
	}
	fmt.Fprintf(&b, ", tools offered %v, %d messages); add a rule or a default rule", c.Tools, c.Messages)
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
