package wire

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// MaxAssembledBytes bounds the content an Assembler keeps for one stream's
// history entry; past it, content is dropped and the entry notes it.
const MaxAssembledBytes = 4 << 20

// AssemblyBudget counts the bytes an Assembler keeps against
// MaxAssembledBytes. Assemblers embed it.
type AssemblyBudget struct {
	Used      int
	Truncated bool
}

// Add appends s to sb when it fits the budget.
func (b *AssemblyBudget) Add(sb *strings.Builder, s string) {
	if b.take(len(s)) {
		sb.WriteString(s)
	}
}

// take counts n more bytes against the budget; false (and Truncated) when
// they do not fit.
func (b *AssemblyBudget) take(n int) bool {
	if b.Used+n > MaxAssembledBytes {
		b.Truncated = true
		return false
	}
	b.Used += n
	return true
}

// AddLiteral appends the text of the JSON string literal lit (quotes
// included; valid JSON) to sb when it fits the budget, without making a
// string of it first when it holds nothing to unescape.
func (b *AssemblyBudget) AddLiteral(sb *strings.Builder, lit []byte) {
	body, ok := jsontop.PlainBody(lit)
	if !ok {
		s, err := jsontop.Unquote(lit)
		if err != nil {
			return
		}
		b.Add(sb, s)
		return
	}
	if b.take(len(body)) {
		sb.Write(body)
	}
}

// Keep returns s when it fits the budget (counted once: a replaced value
// gives back its old bytes), else old.
func (b *AssemblyBudget) Keep(old, s string) string {
	if b.Used-len(old)+len(s) > MaxAssembledBytes {
		b.Truncated = true
		return old
	}
	b.Used += len(s) - len(old)
	return s
}

// Note is the note of an Assembler's Result: empty unless content was cut.
func (b *AssemblyBudget) Note() string {
	if b.Truncated {
		return fmt.Sprintf("streamed response larger than %d bytes; history keeps the first part", MaxAssembledBytes)
	}
	return ""
}

// SortedKeys returns the keys of m in increasing order.
func SortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// MustString returns s as a JSON string.
func MustString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
