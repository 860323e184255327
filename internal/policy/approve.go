package policy

import (
	"encoding/json"
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// Approval rules (pod key `approve: <CEL>` on a tools entry) are the
// grant conditions' language with one more variable:
//
//	args   map(string, dyn): the call's arguments as parsed JSON (numbers
//	       are doubles, which CEL compares with ints)
//
// A rule that holds makes the call wait for a person's decision; one that
// fails to evaluate (a missing argument, a wrong type) holds too: an
// approval rule fails closed, toward asking.

var (
	approveEnvOnce sync.Once
	approveEnvVal  *cel.Env
	approveEnvErr  error
)

// approveEnv is env plus args.
func approveEnv() (*cel.Env, error) {
	approveEnvOnce.Do(func() {
		e, err := env()
		if err != nil {
			approveEnvErr = err
			return
		}
		approveEnvVal, approveEnvErr = e.Extend(cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)))
	})
	return approveEnvVal, approveEnvErr
}

// CheckApproval parses and type-checks an approval rule.
func CheckApproval(expr string) error {
	_, err := CompileApproval(expr)
	return err
}

// CompileApproval checks an approval rule and makes it a program bounded
// by CostLimit.
func CompileApproval(expr string) (*Rule, error) {
	e, err := approveEnv()
	if err != nil {
		return nil, err
	}
	return compileIn(e, expr)
}

// maxApprovalPrograms bounds the compiled approval rules kept; the cache
// starts over when full (a rule is recompiled, never lost).
const maxApprovalPrograms = 1024

// approvalPrograms are compiled approval rules by expression.
type approvalPrograms struct {
	mu   sync.Mutex
	prgs map[string]*Rule
	errs map[string]error
}

func (c *approvalPrograms) get(expr string) (*Rule, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.prgs[expr]; ok {
		return r, nil
	}
	if err, ok := c.errs[expr]; ok {
		return nil, err
	}
	if c.prgs == nil || len(c.prgs)+len(c.errs) >= maxApprovalPrograms {
		c.prgs, c.errs = map[string]*Rule{}, map[string]error{}
	}
	r, err := CompileApproval(expr)
	if err != nil {
		c.errs[expr] = err
		return nil, err
	}
	c.prgs[expr] = r
	return r, nil
}

// NeedsApproval reports the first of t's approvals that holds for a call
// with args (a JSON object) under in, if any. A rule that does not
// compile or fails to evaluate holds, and err says why.
func (e *Evaluator) NeedsApproval(t *manifest.Tool, in Input, args json.RawMessage) (a manifest.Approval, held bool, err error) {
	var parsed map[string]any
	for _, a := range t.Approve {
		if a.Always {
			return a, true, nil
		}
		prg, err := e.approve.get(a.When)
		if err != nil {
			return a, true, fmt.Errorf("approval rule %s does not compile: %w", a.Source, err)
		}
		if parsed == nil {
			if err := json.Unmarshal(args, &parsed); err != nil || parsed == nil {
				return a, true, fmt.Errorf("approval rule %s: the arguments are not a JSON object", a.Source)
			}
		}
		out, _, err := prg.prg.Eval(&activation{in: &in, tool: toolView(t), args: parsed})
		if err != nil {
			return a, true, fmt.Errorf("approval rule %s failed: %w", a.Source, err)
		}
		ok, err := asBool(out)
		if err != nil || ok {
			return a, true, err
		}
	}
	return manifest.Approval{}, false, nil
}
