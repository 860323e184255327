package sharedstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/keypool"
)

// KeyStates shares the state of provider keys (keypool.Shared) between
// replicas: one hash, cllama:<pod>:keys (key reference → state), and a
// channel of the same name on which each change is published, so a key
// one replica saw limited is skipped by the others at once. A state is
// small and there is one per configured key: the hash stays bounded.
type KeyStates struct {
	c    *redis.Client
	hash string
	// self marks this replica's messages, which it does not apply again.
	self string
}

var _ keypool.Shared = (*KeyStates)(nil)

// maxKeyMessage bounds a published message.
const maxKeyMessage = 1024

// NewKeyStates returns the key states of pod on c.
func NewKeyStates(c *redis.Client, pod string) *KeyStates {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &KeyStates{c: c, hash: "cllama:" + pod + ":keys", self: hex.EncodeToString(b[:])}
}

// Put implements keypool.Shared.
func (k *KeyStates) Put(ctx context.Context, ref string, value []byte) error {
	pipe := k.c.TxPipeline()
	if len(value) == 0 {
		pipe.HDel(ctx, k.hash, ref)
	} else {
		pipe.HSet(ctx, k.hash, ref, value)
	}
	pipe.Publish(ctx, k.hash, k.self+"\n"+ref+"\n"+string(value))
	_, err := pipe.Exec(ctx)
	return err
}

// All implements keypool.Shared.
func (k *KeyStates) All(ctx context.Context) (map[string][]byte, error) {
	m, err := k.c.HGetAll(ctx, k.hash).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(m))
	for ref, v := range m {
		out[ref] = []byte(v)
	}
	return out, nil
}

// Watch implements keypool.Shared: fn gets every change another replica
// publishes, in order, until stop.
func (k *KeyStates) Watch(fn func(ref string, value []byte)) (stop func()) {
	sub := k.c.Subscribe(context.Background(), k.hash)
	// The subscription is live once Redis confirmed it: a change put
	// after Watch returns is seen.
	_, _ = sub.Receive(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg := range sub.Channel() {
			if len(msg.Payload) > maxKeyMessage {
				continue
			}
			from, rest, ok := strings.Cut(msg.Payload, "\n")
			if !ok || from == k.self {
				continue
			}
			ref, value, ok := strings.Cut(rest, "\n")
			if !ok {
				continue
			}
			fn(ref, []byte(value))
		}
	}()
	return func() {
		_ = sub.Close()
		<-done
	}
}
