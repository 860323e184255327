package main

import (
	"flag"

	"github.com/clawdapus/clawgo/internal/proxy"
)

var flagHelp = flag.ErrHelp

// wireStages plugs the request stages into the proxy: the feed Decorator
// (spec 003) and the managed-tool Mediator (spec 000). Each is optional;
// without them cllama is a governed passthrough proxy.
func wireStages(cfg proxy.Config, opts *proxy.Options) error {
	_ = cfg
	_ = opts
	return nil
}
