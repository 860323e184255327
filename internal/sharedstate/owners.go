package sharedstate

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/owners"
)

// Owners is an owners.Registry in Redis: who owns each stored response,
// seen by every replica. Each id expires after MaxAge (the providers keep
// stored responses for about a month); Redis's own memory bound decides
// beyond that.
type Owners struct {
	c      *redis.Client
	prefix string
	ttl    time.Duration
}

var _ owners.Registry = (*Owners)(nil)

// DefaultOwnersAge is how long an owner is remembered.
const DefaultOwnersAge = 30 * 24 * time.Hour

// NewOwners returns the owners registry of pod on c.
func NewOwners(c *redis.Client, pod string, maxAge time.Duration) *Owners {
	if maxAge <= 0 {
		maxAge = DefaultOwnersAge
	}
	return &Owners{c: c, prefix: "cllama:" + pod + ":owner:", ttl: maxAge}
}

// Owner implements owners.Registry; an unreachable Redis denies (an id
// nobody owns), as a lost id does.
func (o *Owners) Owner(id string) (owners.Owner, bool) {
	ctx, cancel := opCtx(context.Background()) // the owners interface carries no context yet
	defer cancel()
	b, err := o.c.Get(ctx, o.prefix+id).Bytes()
	var ow owners.Owner
	if err != nil || json.Unmarshal(b, &ow) != nil || ow.Agent == "" {
		return owners.Owner{}, false
	}
	return ow, true
}

// Record implements owners.Registry; it returns once Redis has the id.
func (o *Owners) Record(id string, ow owners.Owner) error {
	if id == "" || len(id) > owners.MaxIDBytes {
		return owners.ErrInvalidID
	}
	b, err := json.Marshal(ow)
	if err != nil {
		return err
	}
	ctx, cancel := opCtx(context.Background()) // the owners interface carries no context yet
	defer cancel()
	return o.c.Set(ctx, o.prefix+id, b, o.ttl).Err()
}

// Forget implements owners.Registry.
func (o *Owners) Forget(id string) error {
	ctx, cancel := opCtx(context.Background()) // the owners interface carries no context yet
	defer cancel()
	return o.c.Del(ctx, o.prefix+id).Err()
}

// Close implements owners.Registry (the client is its opener's to close).
func (o *Owners) Close() error { return nil }
