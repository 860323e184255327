package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store in Redis shared by cllama replicas
// (CLLAMA_STATE_URL). A request is the hash cllama:<pod>:approval:<id>
// (the request as created, its arguments' digest and its state, which
// only a pending request changes, atomically, once); the pending ones are
// in the sorted set cllama:<pod>:approvals; a decision is published on
// cllama:<pod>:approvals:decided, so the replica holding the call hears it
// at once (and reads the request every Poll besides). Each replica keeps
// a lease, cllama:<pod>:replica:<id>, while it runs: a pending request
// whose replica's lease is gone ends lost when next read.
type Redis struct {
	c       *redis.Client
	prefix  string
	replica string
	lease   time.Duration

	mu    sync.Mutex
	watch map[string][]chan struct{}

	stop chan struct{}
	done sync.WaitGroup
	sub  *redis.PubSub
}

// DefaultLease is how long a replica's lease lasts unrenewed.
const DefaultLease = 15 * time.Second

// NewRedis returns a Store in Redis for pod, held by replica (its lease
// renewed every third of lease; DefaultLease when zero).
func NewRedis(ctx context.Context, c *redis.Client, pod, replica string, lease time.Duration) (*Redis, error) {
	if lease <= 0 {
		lease = DefaultLease
	}
	s := &Redis{c: c, prefix: "cllama:" + pod + ":", replica: replica, lease: lease, watch: map[string][]chan struct{}{}, stop: make(chan struct{})}
	if err := s.renew(ctx); err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	s.sub = c.Subscribe(ctx, s.channel())
	if _, err := s.sub.Receive(ctx); err != nil {
		_ = s.sub.Close()
		return nil, fmt.Errorf("approvals: subscribing: %w", err)
	}
	s.done.Add(2)
	go s.listen()
	go s.keepLease()
	return s, nil
}

func (s *Redis) key(id string) string           { return s.prefix + "approval:" + id }
func (s *Redis) pendingKey() string             { return s.prefix + "approvals" }
func (s *Redis) channel() string                { return s.prefix + "approvals:decided" }
func (s *Redis) leaseKey(replica string) string { return s.prefix + "replica:" + replica }

func (s *Redis) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	return s.c.Set(ctx, s.leaseKey(s.replica), "1", s.lease).Err()
}

func (s *Redis) keepLease() {
	defer s.done.Done()
	t := time.NewTicker(s.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.renew(context.Background())
		}
	}
}

// listen tells the watchers of each id published.
func (s *Redis) listen() {
	defer s.done.Done()
	ch := s.sub.Channel()
	for {
		select {
		case <-s.stop:
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			s.mu.Lock()
			for _, w := range s.watch[msg.Payload] {
				select {
				case w <- struct{}{}:
				default:
				}
			}
			s.mu.Unlock()
		}
	}
}

// Create implements Store.
func (s *Redis) Create(ctx context.Context, r *Request) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	n, err := s.c.ZCard(ctx, s.pendingKey()).Result()
	if err != nil {
		return err
	}
	if n >= MaxRequests {
		return fmt.Errorf("%d requests are pending already, the most allowed", MaxRequests)
	}
	ttl := time.Until(r.ExpiresAt) + KeepEnded
	_, err = s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.key(r.ID), "json", data, "sha", r.ArgumentsSHA256, "state", Pending)
		p.Expire(ctx, s.key(r.ID), ttl)
		p.ZAdd(ctx, s.pendingKey(), redis.Z{Score: float64(r.CreatedAt.UnixMilli()), Member: r.ID})
		return nil
	})
	return err
}

// decideScript ends a pending request once: 0 unknown, 2 no longer
// pending, 3 other arguments, 1 decided (and published).
var decideScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'state')
if not st then return 0 end
if st ~= 'pending' then return 2 end
if ARGV[5] ~= '' and ARGV[5] ~= redis.call('HGET', KEYS[1], 'sha') then return 3 end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'by', ARGV[2], 'reason', ARGV[3], 'decided_at', ARGV[4])
redis.call('ZREM', KEYS[2], ARGV[6])
redis.call('PUBLISH', KEYS[3], ARGV[6])
return 1
`)

// Decide implements Store.
func (s *Redis) Decide(ctx context.Context, id string, d Decision, now time.Time) (*Request, error) {
	n, err := decideScript.Run(ctx, s.c, []string{s.key(id), s.pendingKey(), s.channel()},
		d.State, d.By, d.Reason, now.UTC().Format(time.RFC3339Nano), d.ArgumentsSHA256, id).Int()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNotFound
	}
	r, gerr := s.read(ctx, id)
	if gerr != nil {
		return nil, gerr
	}
	switch n {
	case 2:
		return r, ErrDecided
	case 3:
		return r, ErrMismatch
	}
	return r, nil
}

// read returns request id as stored.
func (s *Redis) read(ctx context.Context, id string) (*Request, error) {
	m, err := s.c.HGetAll(ctx, s.key(id)).Result()
	if err != nil {
		return nil, err
	}
	return fromHash(id, m)
}

func fromHash(id string, m map[string]string) (*Request, error) {
	if len(m) == 0 || m["json"] == "" {
		return nil, ErrNotFound
	}
	var r Request
	if err := json.Unmarshal([]byte(m["json"]), &r); err != nil || r.ID != id {
		return nil, fmt.Errorf("approval request %s is corrupt in the store", id)
	}
	r.State = m["state"]
	if r.Final() {
		r.By, r.Reason = m["by"], m["reason"]
		if t, err := time.Parse(time.RFC3339Nano, m["decided_at"]); err == nil {
			r.DecidedAt = &t
		}
	}
	return &r, nil
}

// Get implements Store: a pending request whose replica is gone ends
// lost.
func (s *Redis) Get(ctx context.Context, id string) (*Request, error) {
	r, err := s.read(ctx, id)
	if err != nil || r.Final() {
		return r, err
	}
	return s.checkLease(ctx, r)
}

// checkLease ends pending r lost when its replica's lease is gone.
func (s *Redis) checkLease(ctx context.Context, r *Request) (*Request, error) {
	if r.Replica == "" || r.Replica == s.replica {
		return r, nil
	}
	n, err := s.c.Exists(ctx, s.leaseKey(r.Replica)).Result()
	if err != nil || n > 0 {
		return r, nil
	}
	f, err := s.Decide(ctx, r.ID, Decision{State: Lost, By: "cllama", Reason: "the cllama replica holding the call stopped; it will not run"}, time.Now())
	if err != nil && !errors.Is(err, ErrDecided) {
		return r, nil
	}
	return f, nil
}

// Pending implements Store.
func (s *Redis) Pending(ctx context.Context) ([]*Request, error) {
	ids, err := s.c.ZRange(ctx, s.pendingKey(), 0, MaxListed-1).Result()
	if err != nil {
		return nil, err
	}
	cmds, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.HGetAll(ctx, s.key(id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	var out []*Request
	for i, c := range cmds {
		r, err := fromHash(ids[i], c.(*redis.MapStringStringCmd).Val())
		if errors.Is(err, ErrNotFound) {
			s.c.ZRem(ctx, s.pendingKey(), ids[i])
			continue
		}
		if err != nil {
			continue
		}
		if !r.Final() {
			if r, err = s.checkLease(ctx, r); err != nil || r.Final() {
				continue
			}
			out = append(out, r)
		}
	}
	sortRequests(out)
	return out, nil
}

// Watch implements Store.
func (s *Redis) Watch(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.watch[id] = append(s.watch[id], ch)
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		list := s.watch[id]
		for i, c := range list {
			if c == ch {
				s.watch[id] = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(s.watch[id]) == 0 {
			delete(s.watch, id)
		}
	}
}

// Close implements Store: the lease is dropped, so what this replica
// held is lost at once; the client stays open (its owner closes it).
func (s *Redis) Close() error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	close(s.stop)
	err := s.sub.Close()
	s.done.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	s.c.Del(ctx, s.leaseKey(s.replica))
	return err
}
