package wire

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// WithUsage is a response body with its usage member set to usage: body
// with that one member replaced (every other byte as the provider sent
// it), or, where body cannot be edited in place, top (its members) encoded
// again with usage among them.
func WithUsage(body []byte, top map[string]json.RawMessage, usage []byte) ([]byte, error) {
	if body != nil {
		if out, ok := jsontop.WithMember(body, "usage", usage); ok {
			return out, nil
		}
	}
	out := make(map[string]json.RawMessage, len(top)+1)
	for k, val := range top {
		out[k] = val
	}
	out["usage"] = usage
	return json.Marshal(out)
}
