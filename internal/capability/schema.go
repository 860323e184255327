package capability

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// checkSchema validates raw as a JSON Schema: a JSON object that compiles
// under draft 2020-12. When input is true it must also describe an object
// (tools take an arguments object, spec 000 §1).
func checkSchema(raw json.RawMessage, input bool) error {
	if input {
		if err := manifest.ValidateSchemaObject(raw); err != nil {
			return err
		}
	} else {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return fmt.Errorf("must be a JSON object")
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("must be valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "mem:///schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("is not a valid JSON Schema: %v", err)
	}
	if _, err := c.Compile(url); err != nil {
		return fmt.Errorf("is not a valid JSON Schema: %v", err)
	}
	return nil
}
