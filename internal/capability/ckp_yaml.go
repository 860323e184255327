package capability

// Reading CKP manifest files: a file holds one or more YAML documents (or one
// JSON value); each is converted to JSON with bounded depth and size so the
// decoder in ckp.go works on one representation.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"gopkg.in/yaml.v3"
)

// ckpDocuments returns each document as JSON.
func ckpDocuments(data []byte) ([]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, fmt.Errorf("not a valid JSON array of manifests: %v", err)
		}
		if len(list) > MaxToolManifestDocs {
			return nil, fmt.Errorf("more than %d manifests in one file", MaxToolManifestDocs)
		}
		return list, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []json.RawMessage
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("not valid YAML or JSON: %v", err)
		}
		if len(n.Content) == 0 {
			continue // an empty document between separators
		}
		v, err := yamlValue(n.Content[0], 0)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("not representable as JSON: %v", err)
		}
		docs = append(docs, raw)
		if len(docs) > MaxToolManifestDocs {
			return nil, fmt.Errorf("more than %d manifests in one file", MaxToolManifestDocs)
		}
	}
}

// maxYAMLDepth bounds nesting (and alias expansion through it).
const maxYAMLDepth = 64

// maxYAMLNodes bounds the values one alias-expanding walk may produce.
const maxYAMLNodes = 1 << 16

// yamlValue converts a YAML node to JSON-compatible Go values: mappings
// need string keys, scalars keep YAML 1.2 core types.
func yamlValue(n *yaml.Node, depth int) (any, error) {
	budget := maxYAMLNodes
	return yamlWalk(n, depth, &budget)
}

func yamlWalk(n *yaml.Node, depth int, budget *int) (any, error) {
	*budget--
	if depth > maxYAMLDepth || *budget < 0 {
		return nil, fmt.Errorf("line %d: the document is nested too deeply or is too large", n.Line)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return yamlWalk(n.Content[0], depth+1, budget)
	case yaml.AliasNode:
		return yamlWalk(n.Alias, depth+1, budget)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping keys must be strings", k.Line)
			}
			if k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: YAML merge keys (<<) are not supported in manifests", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: key %q appears twice", k.Line, k.Value)
			}
			v, err := yamlWalk(n.Content[i+1], depth+1, budget)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlWalk(c, depth+1, budget)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return b, nil
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				var f float64
				if err2 := n.Decode(&f); err2 != nil {
					return nil, fmt.Errorf("line %d: %v", n.Line, err)
				}
				return f, nil
			}
			return i, nil
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, fmt.Errorf("line %d: %s is not a JSON number", n.Line, n.Value)
			}
			return f, nil
		default:
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}
