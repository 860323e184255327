package toolexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaURL is the resource name every compiled schema is registered
// under. Each schema has its own compiler, so the name never collides.
const schemaURL = "mem:///tool-schema.json"

// maxSchemaMessages bounds how many violations one message lists.
const maxSchemaMessages = 4

var messagePrinter = message.NewPrinter(language.English)

// compiledSchema is one schema compiled once and shared by every call that
// presents the same bytes.
type compiledSchema struct {
	once sync.Once
	sch  *jsonschema.Schema
	err  error
	// declaresClawID records whether the top-level "properties" names
	// claw_id, in which case the argument is forced to the agent id.
	declaresClawID bool
}

// schemaCache compiles JSON Schemas once, keyed by their bytes, so two tools
// with the same schema share the compiled form and an edited manifest never
// sees a stale one. It is bounded: when full, an arbitrary entry is dropped.
type schemaCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*compiledSchema
}

func newSchemaCache(max int) *schemaCache {
	return &schemaCache{max: max, entries: make(map[string]*compiledSchema)}
}

// get returns the compiled schema for raw, compiling it on first use.
func (c *schemaCache) get(raw json.RawMessage) *compiledSchema {
	c.mu.Lock()
	e, ok := c.entries[string(raw)]
	if !ok {
		if len(c.entries) >= c.max {
			for k := range c.entries {
				delete(c.entries, k)
				break
			}
		}
		e = &compiledSchema{}
		c.entries[string(raw)] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.sch, e.declaresClawID, e.err = compileSchema(raw) })
	return e
}

// refuseLoader keeps schema compilation hermetic: a tool's schema may not
// pull documents from files or the network ($ref to anything but itself or
// the embedded meta-schemas fails to compile).
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, errors.New("external schema references are not allowed")
}

func compileSchema(raw json.RawMessage) (*jsonschema.Schema, bool, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, false, fmt.Errorf("schema is not valid JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	// Tools' schemas come from MCP tools/list output and descriptors, which
	// are written against draft 2020-12 unless they say otherwise.
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, false, err
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, false, err
	}
	declares := false
	if obj, ok := doc.(map[string]any); ok {
		if props, ok := obj["properties"].(map[string]any); ok {
			_, declares = props[clawIDParam]
		}
	}
	return sch, declares, nil
}

// describeViolation turns a validation error into a short message naming
// the failing fields by JSON pointer, e.g.
// `/quantity: got string, want number; missing property "side"`.
func describeViolation(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(parts) >= maxSchemaMessages {
			return
		}
		if len(v.Causes) == 0 {
			loc := "/" + strings.Join(v.InstanceLocation, "/")
			parts = append(parts, loc+": "+v.ErrorKind.LocalizedString(messagePrinter))
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) == 0 {
		return "does not match the schema"
	}
	return strings.Join(parts, "; ")
}
