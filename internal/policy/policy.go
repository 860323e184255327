// Package policy is dynamic tool policy (spec 000 phase 6, "Dynamic tool
// context"): a grant may carry a condition, `when: <CEL expression>`, and
// the tools it grants are available only while the condition holds. CEL
// (cel.dev/cel-go, the language of Kubernetes admission policies) is
// checked at compile time (Check) and evaluated by cllama per request
// before tools are presented, and again before each call runs (Evaluator).
//
// Expressions see exactly these variables:
//
//	now      timestamp   the time of the request
//	agent    .id .service .type (strings)
//	tool     .name (canonical "<service>.<tool>") .service .annotations (map)
//	feeds    map(string, dyn): each of the agent's feeds fetched so far, by
//	         name: parsed JSON when the body is JSON, else its text; a feed
//	         not fetched yet is absent
//	session  .called (list of canonical names of managed tools called
//	         earlier in this conversation) .rounds (int)
//
// A rule must evaluate to a bool. A rule that fails at run time denies:
// the policy fails closed.
package policy

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
	// Time zones for now.getHours("America/New_York") and the like, also
	// in images without a zoneinfo database (cllama's is FROM scratch).
	_ "time/tzdata"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// MaxExprBytes bounds an expression's length.
const MaxExprBytes = 4096

// CostLimit bounds one evaluation (cel-go's cost units: roughly one per
// operation, more per element of a list or string traversed or copied,
// also on dyn values such as feeds; see dynamicCost). An evaluation that
// reaches it fails, which denies.
const CostLimit = 100_000

// Agent is `agent` in an expression.
type Agent struct {
	ID      string `cel:"id"`
	Service string `cel:"service"`
	Type    string `cel:"type"`
}

// Tool is `tool` in an expression.
type Tool struct {
	Name        string         `cel:"name"`
	Service     string         `cel:"service"`
	Annotations map[string]any `cel:"annotations"`
}

// Session is `session` in an expression.
type Session struct {
	Called []string `cel:"called"`
	Rounds int64    `cel:"rounds"`
}

// Input is what a request's rules are evaluated against (tool is per
// tool).
type Input struct {
	Now     time.Time
	Agent   Agent
	Feeds   map[string]any
	Session Session
}

var (
	envOnce sync.Once
	envVal  *cel.Env
	envErr  error
)

// env is the one CEL environment of tool policy.
func env() (*cel.Env, error) {
	envOnce.Do(func() {
		opts := []cel.EnvOption{
			stdLibWithoutZones(),
			ext.NativeTypes(ext.ParseStructTags(true), reflect.TypeFor[Agent](), reflect.TypeFor[Tool](), reflect.TypeFor[Session]()),
			cel.Variable("now", cel.TimestampType),
			cel.Variable("agent", cel.ObjectType("policy.Agent")),
			cel.Variable("tool", cel.ObjectType("policy.Tool")),
			cel.Variable("feeds", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("session", cel.ObjectType("policy.Session")),
			ext.Strings(),
		}
		envVal, envErr = cel.NewCustomEnv(append(opts, zoneFunctions()...)...)
	})
	return envVal, envErr
}

// Rule is a compiled expression.
type Rule struct {
	prg cel.Program
	// usesTool: the result depends on the tool; otherwise one evaluation
	// serves every tool of a request.
	usesTool bool
}

// Check parses and type-checks expr. Its error is CEL's, with the line
// and column within the expression ("1:12: undeclared reference to
// 'feed'"), and says what the result must be.
func Check(expr string) error {
	_, err := Compile(expr)
	return err
}

// Compile checks expr and makes it a program bounded by CostLimit.
func Compile(expr string) (*Rule, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	return compileIn(e, expr)
}

// compileIn is Compile in environment e.
func compileIn(e *cel.Env, expr string) (*Rule, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("empty expression")
	}
	if len(expr) > MaxExprBytes {
		return nil, fmt.Errorf("the expression is %d bytes; at most %d", len(expr), MaxExprBytes)
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		return nil, errors.New(cleanIssues(iss.Err().Error()))
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return nil, fmt.Errorf("the expression gives %s; it must give a bool", ast.OutputType())
	}
	prg, err := e.Program(ast, cel.CostLimit(CostLimit), cel.CostTracking(dynamicCost{}))
	if err != nil {
		return nil, err
	}
	r := &Rule{prg: prg}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == "tool" {
			r.usesTool = true
		}
	}
	return r, nil
}

// cleanIssues makes CEL's report one line per issue, without the
// "<input>" source name.
func cleanIssues(s string) string {
	s = strings.ReplaceAll(s, "ERROR: <input>:", "")
	var out []string
	for _, line := range strings.Split(s, "\n") {
		// CEL follows each issue with the expression and a caret; the
		// position in the message says the same.
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "|") {
			continue
		}
		out = append(out, strings.TrimSpace(line))
	}
	return strings.Join(out, "; ")
}

// activation resolves the variables without a map per evaluation.
type activation struct {
	in   *Input
	tool *Tool
	// args are a call's arguments (approval rules only).
	args map[string]any
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "now":
		return types.Timestamp{Time: a.in.Now}, true
	case "agent":
		return a.in.Agent, true
	case "tool":
		return a.tool, a.tool != nil
	case "feeds":
		if a.in.Feeds == nil {
			return map[string]any{}, true
		}
		return a.in.Feeds, true
	case "session":
		return a.in.Session, true
	case "args":
		return a.args, a.args != nil
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// Eval evaluates r for tool t (nil when r does not use it).
func (r *Rule) Eval(in *Input, t *Tool) (bool, error) {
	out, _, err := r.prg.Eval(&activation{in: in, tool: t})
	if err != nil {
		return false, err
	}
	return asBool(out)
}

func asBool(v ref.Val) (bool, error) {
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the rule gave %v, not a bool", v)
	}
	return b, nil
}
