// Package formats is the one registry of the API formats cllama speaks,
// keyed by format name. The HTTP edge takes its routes from it and every
// stage finds a request's format through it; adding a format is one package
// under internal/wire and one line in the list below.
//
// It owns no format logic itself (internal/wire/<format> does).
package formats

import (
	"errors"
	"fmt"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/anthropic"
	"github.com/clawdapus/clawgo/internal/wire/openai"
	"github.com/clawdapus/clawgo/internal/wire/responses"
)

// registered is every format, in the order routes are listed. The first
// one also answers requests that reach no format's route (see Fallback).
var registered = []wire.Format{
	openai.New(),
	anthropic.New(),
	responses.New(),
}

// ErrUnregistered is returned for a format name no package registered.
var ErrUnregistered = errors.New("unregistered API format")

var byName = mustIndex(registered)

// index checks list (names and routes present and unique) and maps each
// name to its format.
func index(list []wire.Format) (map[exchange.Format]wire.Format, error) {
	if len(list) == 0 {
		return nil, errors.New("formats: no format registered")
	}
	m := make(map[exchange.Format]wire.Format, len(list))
	routes := map[string]string{}
	for _, f := range list {
		name, ep := f.Name(), f.Endpoint()
		switch {
		case name == "":
			return nil, fmt.Errorf("formats: a format (%T) has no name", f)
		case m[exchange.Format(name)] != nil:
			return nil, fmt.Errorf("formats: format %q registered twice", name)
		case ep.Route == "" || ep.Upstream == "":
			return nil, fmt.Errorf("formats: format %q: endpoint %+v needs a route and an upstream path", name, ep)
		case routes[ep.Route] != "":
			return nil, fmt.Errorf("formats: formats %q and %q both claim route %s", routes[ep.Route], name, ep.Route)
		}
		m[exchange.Format(name)] = f
		routes[ep.Route] = name
	}
	return m, nil
}

// mustIndex stops the program at start-up when the list is inconsistent:
// that is a build mistake, not a request's.
func mustIndex(list []wire.Format) map[exchange.Format]wire.Format {
	m, err := index(list)
	if err != nil {
		panic(err)
	}
	return m
}

// All returns every registered format, in registration order. The slice
// is the caller's.
func All() []wire.Format { return append([]wire.Format(nil), registered...) }

// Lookup returns the format registered as name, or an error wrapping
// ErrUnregistered; it never substitutes another format.
func Lookup(name exchange.Format) (wire.Format, error) {
	if f := byName[name]; f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("%w %q (registered: %s)", ErrUnregistered, name, Names())
}

// Names returns the registered names, comma-separated, for messages.
func Names() string {
	s := ""
	for i, f := range registered {
		if i > 0 {
			s += ", "
		}
		s += f.Name()
	}
	return s
}

// Fallback is the format whose error shape answers a request that reaches
// no format's route (404, or a wrong method on /health): such a request
// names no format, so one is chosen here, explicitly, as the first
// registered.
func Fallback() wire.Format { return registered[0] }
