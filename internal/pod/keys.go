package pod

// keyDecoder decodes one key of an x-claw block into the typed block C.
// A table of them, in the order the keys are listed to operators, is
// both how a block is decoded and the set of keys it knows.
type keyDecoder[C any] struct {
	name string
	// null: a null value is decoded too (`tools:` with nothing after it
	// declares an empty list); otherwise a null key is as good as absent.
	null   bool
	decode func(d *decoder, c *C, raw any) error
}

// keyNames lists the keys of a table, in its order.
func keyNames[C any](table []keyDecoder[C]) []string {
	out := make([]string, len(table))
	for i, k := range table {
		out[i] = k.name
	}
	return out
}

// decodeKeys decodes every key of the mapping m (written at prefix) that
// table knows into c, in the table's order, and refuses the keys it does
// not know. It returns every problem, not just the first: each key is
// decoded whatever became of the others.
func decodeKeys[C any](d *decoder, prefix string, table []keyDecoder[C], m map[string]any, c *C) Errors {
	var problems Errors
	problems.Collect(d.unknownKeys(prefix, m, keyNames(table)))
	for _, k := range table {
		raw, ok := m[k.name]
		if !ok || (raw == nil && !k.null) {
			continue
		}
		if err := k.decode(d, c, raw); err != nil && !problems.Collect(err) {
			// The decoders say what is wrong with an *Error; anything
			// else is still a problem of this key.
			problems = append(problems, d.errf(prefix+"."+k.name, "correct the value", "%v", err))
		}
	}
	return problems
}

// podKeyDecoders are the keys of the pod-level x-claw block.
var podKeyDecoders = []keyDecoder[Claw]{
	{name: "pod", decode: func(d *decoder, c *Claw, raw any) (err error) {
		c.Name, err = d.str("x-claw.pod", raw, false)
		return err
	}},
	{name: "cllama-defaults", decode: func(d *decoder, c *Claw, raw any) (err error) {
		c.CllamaDefaults, err = d.cllamaDefaults(raw)
		return err
	}},
	{name: "tools-defaults", null: true, decode: func(d *decoder, c *Claw, raw any) (err error) {
		c.HasToolsDefaults = true
		c.ToolsDefaults, err = decodeList(d, toolsList, "x-claw.tools-defaults", raw, false)
		return err
	}},
	{name: "tools-mode", decode: func(d *decoder, c *Claw, raw any) (err error) {
		c.ToolsMode, err = d.toolMode("x-claw.tools-mode", "tools-mode", raw)
		return err
	}},
	{name: "feeds-defaults", null: true, decode: func(d *decoder, c *Claw, raw any) (err error) {
		c.HasFeedsDefaults = true
		c.FeedsDefaults, err = decodeList(d, feedsList, "x-claw.feeds-defaults", raw, false)
		return err
	}},
	{name: "tool-policy", decode: func(d *decoder, c *Claw, raw any) (err error) {
		c.ToolPolicy, err = d.policy("x-claw.tool-policy", raw)
		return err
	}},
	{name: "runner-env", decode: func(d *decoder, c *Claw, raw any) (err error) {
		c.RunnerEnv, err = d.runnerEnv("x-claw.runner-env", raw)
		return err
	}},
	{name: "alerts", decode: func(d *decoder, c *Claw, raw any) (err error) {
		c.Alerts, err = d.alerts("x-claw.alerts", raw)
		return err
	}},
}

// podKeys are the keys the pod-level x-claw block knows.
var podKeys = keyNames(podKeyDecoders)

// serviceKeyDecoders are the keys of a service's x-claw block. The rules
// between keys (what an agent may not declare, what needs cllama) are
// decoder.serviceRules.
var serviceKeyDecoders = []keyDecoder[ServiceClaw]{
	{name: "agent", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.Agent, err = d.str("x-claw.agent", raw, false)
		return err
	}},
	{name: "type", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.Type, err = d.str("x-claw.type", raw, false)
		return err
	}},
	{name: "cllama", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.Cllama, err = d.cllama(raw)
		return err
	}},
	{name: "surfaces", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.Surfaces, err = d.surfaces(raw)
		return err
	}},
	{name: "tools", null: true, decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.HasTools = true
		c.Tools, err = decodeList(d, toolsList, "x-claw.tools", raw, true)
		return err
	}},
	{name: "feeds", null: true, decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.HasFeeds = true
		c.Feeds, err = decodeList(d, feedsList, "x-claw.feeds", raw, true)
		return err
	}},
	{name: "tool-policy", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.ToolPolicy, err = d.policy("x-claw.tool-policy", raw)
		return err
	}},
	{name: "describe-file", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.DescribeFile, err = d.str("x-claw.describe-file", raw, false)
		return err
	}},
	{name: "count", decode: func(d *decoder, c *ServiceClaw, raw any) error {
		n, err := d.integer("x-claw.count", raw)
		if err != nil {
			return err
		}
		if n < 1 || n > 1000 {
			return d.errf("x-claw.count", "use a number of agents between 1 and 1000", "must be between 1 and 1000, got %d", n)
		}
		c.Count = n
		return nil
	}},
	{name: "mcp-stdio", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.MCPStdio, err = d.mcpStdio(raw)
		return err
	}},
	{name: "service-auth", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.ServiceAuth, err = d.serviceAuth(raw)
		return err
	}},
	{name: "tool-manifests", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.ToolManifests, err = d.toolManifests(raw)
		return err
	}},
	{name: "egress", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.Egress, err = d.boolean("x-claw.egress", raw)
		return err
	}},
	{name: "runner-env", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.RunnerEnv, err = d.runnerEnv("x-claw.runner-env", raw)
		return err
	}},
	{name: "models", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.Models, err = d.models("x-claw.models", raw)
		return err
	}},
	{name: "tool-annotations", decode: func(d *decoder, c *ServiceClaw, raw any) (err error) {
		c.ToolAnnotations, err = d.toolAnnotations(raw)
		return err
	}},
}

// serviceKeys are the keys a service's x-claw block knows.
var serviceKeys = keyNames(serviceKeyDecoders)
