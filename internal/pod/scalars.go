package pod

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Scalar helpers: YAML values arrive as string, int, float64, bool, …

func (d *decoder) str(key string, v any, required bool) (string, error) {
	if v == nil {
		if required {
			return "", d.errf(key, "set it", "required")
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", d.errf(key, "write a string", "must be a string, got %s", typeName(v))
	}
	if required && s == "" {
		return "", d.errf(key, "set it", "must not be empty")
	}
	return s, nil
}

// scalar renders a YAML scalar as a string (numbers and booleans as
// written by YAML 1.2).
func (d *decoder) scalar(key string, v any) (string, error) {
	switch t := v.(type) {
	case nil:
		return "", nil
	case string:
		return t, nil
	case bool:
		return strconv.FormatBool(t), nil
	case int:
		return strconv.Itoa(t), nil
	case int64:
		return strconv.FormatInt(t, 10), nil
	case uint64:
		return strconv.FormatUint(t, 10), nil
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), nil
	default:
		return "", d.errf(key, "write a string", "must be a scalar, got %s", typeName(v))
	}
}

func (d *decoder) integer(key string, v any) (int, error) {
	switch t := v.(type) {
	case int:
		return t, nil
	case int64:
		if t == int64(int(t)) {
			return int(t), nil
		}
	case uint64:
		if t <= 1<<31 {
			return int(t), nil
		}
	case float64:
		if t == float64(int(t)) {
			return int(t), nil
		}
	case string:
		// Interpolated values (${N}) arrive as strings.
		if n, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
			return n, nil
		}
	}
	return 0, d.errf(key, "write a whole number", "must be an integer, got %s", describeValue(v))
}

// boolean accepts a YAML boolean or, for interpolated values, the strings
// true and false.
func (d *decoder) boolean(key string, v any) (bool, error) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, d.errf(key, "write true or false", "must be a boolean, got %s", describeValue(v))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func describeValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return typeName(v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
