package mediate

import (
	"encoding/json"
	"fmt"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/snapcache"
	"github.com/clawdapus/clawgo/internal/toolcall"
	"github.com/clawdapus/clawgo/internal/toolname"
	"github.com/clawdapus/clawgo/internal/wire"
)

// catalog is one manifest's managed tools as presented to a model: the
// provider-safe alias of every canonical name (internal/toolname) and the pre-rendered tool
// definitions of both formats. It is built once per manifest snapshot
// (issue 3 "The alias map is built once per manifest") and shared.
type catalog struct {
	tools       []*manifest.Tool
	byCanonical map[string]*manifest.Tool
	alias       map[string]string // canonical -> alias
	byAlias     map[string]*manifest.Tool
	// defs[format name][i] is tools[i]'s definition under its alias.
	defs map[string][]json.RawMessage
	// nativeMode are the agent's native-mode tools by canonical name and
	// by the alias they would have had: never presented to the model,
	// refused with a pointer to /mcp when the model calls one anyway.
	nativeMode map[string]*manifest.Tool
	// readAlias is the built-in claw.read_result's alias, readDefs its
	// definition by format name (offered only where a handle is held).
	readAlias string
	readDefs  map[string]json.RawMessage
}

// catalogCache maps a manifest snapshot to its catalog, for as long as
// the snapshot lives.
type catalogCache struct {
	c snapcache.Cache[manifest.Tools, *catalog]
}

func newCatalogCache() *catalogCache { return &catalogCache{} }

func (cc *catalogCache) get(t *manifest.Tools, formats []wire.ToolLoop) (*catalog, error) {
	return cc.c.Get(t, func() (*catalog, error) { return buildCatalog(t, formats) })
}

func buildCatalog(t *manifest.Tools, formats []wire.ToolLoop) (*catalog, error) {
	c := &catalog{
		byCanonical: make(map[string]*manifest.Tool, len(t.Tools)),
		alias:       make(map[string]string, len(t.Tools)),
		byAlias:     make(map[string]*manifest.Tool, len(t.Tools)),
		defs:        map[string][]json.RawMessage{},
	}
	for i := range t.Tools {
		tool := &t.Tools[i]
		if tool.Native() {
			if c.nativeMode == nil {
				c.nativeMode = map[string]*manifest.Tool{}
			}
			c.nativeMode[tool.Name] = tool
			c.nativeMode[toolname.Readable(tool.Name)] = tool
			continue
		}
		c.tools = append(c.tools, tool)
		c.byCanonical[tool.Name] = tool
	}
	names := make([]string, len(c.tools))
	for i, tool := range c.tools {
		names[i] = tool.Name
	}
	alias, err := toolname.Aliases(names)
	if err != nil {
		return nil, fmt.Errorf("tools.json: %v", err)
	}
	for _, tool := range c.tools {
		a := alias[tool.Name]
		c.alias[tool.Name] = a
		c.byAlias[a] = tool
	}
	c.readAlias = toolname.Readable(toolcall.ReadResult.Name)
	if _, taken := c.byAlias[c.readAlias]; taken {
		c.readAlias = toolname.Salted(toolcall.ReadResult.Name, "builtin:")
	}
	c.readDefs = make(map[string]json.RawMessage, len(formats))
	for _, f := range formats {
		d, err := f.ToolDefinition(c.readAlias, toolcall.ReadResult.Description, toolcall.ReadResult.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("built-in tool %s: %v", toolcall.ReadResult.Name, err)
		}
		c.readDefs[f.Name()] = d
	}
	for _, f := range formats {
		defs := make([]json.RawMessage, 0, len(c.tools))
		for _, tool := range c.tools {
			d, err := f.ToolDefinition(c.alias[tool.Name], tool.Description, tool.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tools.json: tool %q: %v", tool.Name, err)
			}
			defs = append(defs, d)
		}
		c.defs[f.Name()] = defs
	}
	return c, nil
}

// resolve returns the managed tool a model-emitted name refers to: its
// alias or, leniently, its canonical name.
func (c *catalog) resolve(name string) (*manifest.Tool, bool) {
	if t, ok := c.byAlias[name]; ok {
		return t, true
	}
	t, ok := c.byCanonical[name]
	return t, ok
}

// nativeModeTool returns the native-mode tool a model-emitted name
// refers to, if any.
func (c *catalog) nativeModeTool(name string) (*manifest.Tool, bool) {
	t, ok := c.nativeMode[name]
	return t, ok
}

// presentation is the per-request view of the catalog: usually the shared
// aliases; when the runner declares a tool whose name equals an alias, that
// tool keeps its name and the managed tool is presented under a hashed
// alias for this request.
type presentation struct {
	c      *catalog
	alias  map[string]string // canonical -> presented (only overrides)
	byName map[string]*manifest.Tool
	// all is every managed tool's definition (catalog order), defs those
	// presented: all but the withheld.
	all, defs []json.RawMessage
	natives   map[string]bool
	// withheld are managed tools tool policy keeps out of this request.
	withheld map[string]bool
	// read is claw.read_result's definition under readName once offered
	// (the conversation holds a handle), else nil.
	read     json.RawMessage
	readName string
}

// offerRead presents claw.read_result from now on; it reports whether
// it was not presented yet.
func (p *presentation) offerRead(f wire.ToolLoop) (bool, error) {
	if p.read != nil {
		return false, nil
	}
	p.readName = p.c.readAlias
	p.read = p.c.readDefs[f.Name()]
	if p.natives[p.readName] {
		// The runner has a tool of that name: the built-in takes another.
		p.readName = toolname.Salted(toolcall.ReadResult.Name, "runner-collision:")
		d, err := f.ToolDefinition(p.readName, toolcall.ReadResult.Description, toolcall.ReadResult.InputSchema)
		if err != nil {
			return false, err
		}
		p.read = d
	}
	return true, nil
}

// extra are the built-in definitions presented besides the managed tools.
func (p *presentation) extra() []json.RawMessage {
	if p.read == nil {
		return nil
	}
	return []json.RawMessage{p.read}
}

// withhold presents every managed tool but the named ones.
func (p *presentation) withhold(names map[string]bool) {
	if len(names) == 0 {
		p.defs, p.withheld = p.all, nil
		return
	}
	defs := make([]json.RawMessage, 0, len(p.all))
	for i, tool := range p.c.tools {
		if !names[tool.Name] {
			defs = append(defs, p.all[i])
		}
	}
	p.defs, p.withheld = defs, names
}

func (c *catalog) present(f wire.ToolLoop, nativeNames []string) (*presentation, error) {
	p := &presentation{c: c, defs: c.defs[f.Name()], natives: make(map[string]bool, len(nativeNames))}
	for _, n := range nativeNames {
		p.natives[n] = true
	}
	for i, tool := range c.tools {
		if !p.natives[c.alias[tool.Name]] {
			continue
		}
		if p.alias == nil {
			p.alias = map[string]string{}
			p.byName = map[string]*manifest.Tool{}
			p.defs = append([]json.RawMessage(nil), p.defs...)
		}
		a := toolname.Salted(tool.Name, "runner-collision:")
		d, err := f.ToolDefinition(a, tool.Description, tool.InputSchema)
		if err != nil {
			return nil, err
		}
		p.alias[tool.Name] = a
		p.byName[a] = tool
		p.defs[i] = d
	}
	p.all = p.defs
	return p, nil
}

// name is the presented name of a managed tool.
func (p *presentation) name(canonical string) string {
	if canonical == toolcall.ReadResult.Name && p.read != nil {
		return p.readName
	}
	if a, ok := p.alias[canonical]; ok {
		return a
	}
	return p.c.alias[canonical]
}

// owner classifies a model-emitted tool name. Runner tools win over managed
// names; a name that is neither is answered by the proxy (unknown tool,
// fail closed: spec 000 "reject unknown tools").
func (p *presentation) owner(name string) (tool *manifest.Tool, native bool) {
	if t, ok := p.byName[name]; ok {
		return t, false
	}
	if p.read != nil && name == p.readName {
		return toolcall.ReadResult, false
	}
	if p.natives[name] {
		return nil, true
	}
	if t, ok := p.c.resolve(name); ok {
		return t, false
	}
	return nil, false
}

// choiceTarget maps a tool_choice name (canonical or alias) of a managed
// tool to its presented name.
func (p *presentation) choiceTarget(name string) (string, bool) {
	if p.natives[name] {
		return "", false
	}
	if t, ok := p.c.resolve(name); ok && !p.withheld[t.Name] {
		return p.name(t.Name), true
	}
	return "", false
}
