package policy

import (
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// CEL charges a call by the overload the type checker chose. An operator
// on values of type dyn (anything read from feeds or tool.annotations)
// has none: it is dispatched at run time and charged 1, so
// `feeds.list.exists(x, x + feeds.big == "")` would copy a large feed once
// per element for a cost of a few units per element. dynamicCost charges
// such a call as CEL charges the overload run time dispatch picks.
type dynamicCost struct{}

var standardTrackers = cost.StandardOverloadTrackers()

func (dynamicCost) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	if overloadID != "" || len(args) != 2 {
		return nil // chosen at check time: CEL's own charge
	}
	if track := standardTrackers[dynamicOverload(function, args[0], args[1])]; track != nil {
		return track(args, result)
	}
	return nil
}

// dynamicOverload is the standard overload of function with operands a
// and b whose cost depends on their size, or "".
func dynamicOverload(function string, a, b ref.Val) string {
	switch function {
	case operators.Add:
		switch a.(type) {
		case types.String:
			return overloads.AddString
		case types.Bytes:
			return overloads.AddBytes
		case traits.Lister:
			return overloads.AddList
		}
	case operators.In:
		if _, ok := b.(traits.Lister); ok {
			return overloads.InList
		}
	case operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		switch a.(type) {
		case types.String:
			return comparisons[function][0]
		case types.Bytes:
			return comparisons[function][1]
		}
	}
	return ""
}

// comparisons are the ordering operators' string and bytes overloads.
var comparisons = map[string][2]string{
	operators.Less:          {overloads.LessString, overloads.LessBytes},
	operators.LessEquals:    {overloads.LessEqualsString, overloads.LessEqualsBytes},
	operators.Greater:       {overloads.GreaterString, overloads.GreaterBytes},
	operators.GreaterEquals: {overloads.GreaterEqualsString, overloads.GreaterEqualsBytes},
}
