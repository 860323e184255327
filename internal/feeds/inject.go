package feeds

import (
	"fmt"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/formats"
)

// injectorFor returns the feed injector of a format: an error when the
// format is not registered or cannot carry feeds.
func injectorFor(format exchange.Format) (wire.FeedInjector, error) {
	f, err := formats.Lookup(format)
	if err != nil {
		return nil, fmt.Errorf("feeds: %w", err)
	}
	inj, ok := f.(wire.FeedInjector)
	if !ok {
		return nil, fmt.Errorf("feeds: the %s format cannot carry context feeds", f.Name())
	}
	return inj, nil
}

// inject splices the feed text into body with inj (where the text goes is
// the format's: see the package doc), returning a new slice. ok is false,
// and body is to be left as is, when body is not a JSON object of the
// format's shape. checked says body was validated already (the edge's
// exchange.Checked); the result, built by splicing, is valid too.
func inject(inj wire.FeedInjector, body []byte, text string, checked bool) ([]byte, bool) {
	if !checked && !jsontop.Valid(body) {
		return nil, false
	}
	i := jsontop.SkipSpace(body, 0)
	if body[i] != '{' {
		return nil, false
	}
	return inj.InjectFeeds(body, text)
}
