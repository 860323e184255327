package pod

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every x-claw key the decoder knows, and every key of a grant entry, is
// written in the README's pod grammar example (tool-manifests has its own
// section).
func TestReadmeDocumentsKeys(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "### Pod grammar")
	block, _, ok2 := strings.Cut(rest, "\nRules:")
	if !ok || !ok2 {
		t.Fatal("README has no pod grammar section")
	}
	elsewhere := map[string]string{"tool-manifests": "### CKP `Tool` manifests"}
	for _, keys := range [][]string{podKeys, serviceKeys, grantKeys} {
		for _, k := range keys {
			if section, ok := elsewhere[k]; ok {
				if !strings.Contains(string(data), section) || !strings.Contains(string(data), k+":") {
					t.Errorf("README documents %s nowhere", k)
				}
				continue
			}
			if !regexp.MustCompile(`(?m)(^|[\s{,])` + regexp.QuoteMeta(k) + `:`).MatchString(block) {
				t.Errorf("the README's pod grammar example does not write %s:", k)
			}
		}
	}
}
