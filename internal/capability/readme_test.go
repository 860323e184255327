package capability

import (
	"os"
	"strings"
	"testing"
)

// The pod file reference's descriptor example is a valid descriptor.
func TestReadmeDescriptorExample(t *testing.T) {
	data, err := os.ReadFile("../../docs/pod-file.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "### Descriptor fields")
	if !ok {
		t.Fatal("docs/pod-file.md has no descriptor field reference")
	}
	_, rest, ok = strings.Cut(rest, "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no JSON example under the descriptor field reference")
	}
	d, err := ParseDescriptor([]byte(block))
	if err != nil {
		t.Fatalf("documented example: %v", err)
	}
	if len(d.Tools) != 2 || len(d.Feeds) != 1 || d.Skill == "" || d.Tool("execute_trade") == nil {
		t.Fatalf("documented example parsed as %+v", d)
	}
}
