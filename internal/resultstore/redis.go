package resultstore

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store in Redis (CLLAMA_STATE_URL), shared by every cllama
// replica of a pod: a handle produced on one is read on any. An entry is
// two keys expiring with the handle, cllama:<pod>:res:b:<handle> (the
// body) and …:m:<handle> (its Meta); the bounds are kept by one script
// that runs atomically on every Put: it drops the expired entries, adds
// the new one, then drops the oldest of the agent's and of everyone's
// until both bounds hold. A Put returns once Redis acknowledged it.
type Redis struct {
	c      redis.UniversalClient
	prefix string
	limits Limits
	now    func() time.Time
}

// RedisOptions configure NewRedis.
type RedisOptions struct {
	// Pod scopes the keys (cllama:<pod>:res:…).
	Pod    string
	Limits Limits
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// NewRedis returns a Redis store over c.
func NewRedis(c redis.UniversalClient, o RedisOptions) *Redis {
	r := &Redis{c: c, prefix: "cllama:" + o.Pod + ":res:", limits: o.Limits.WithDefaults(), now: o.Now}
	if r.now == nil {
		r.now = time.Now
	}
	return r
}

// Limits implements Store.
func (r *Redis) Limits() Limits { return r.limits }

// putScript: KEYS none (the keys are made from ARGV[1], the prefix, as
// entries evicted are only known inside). ARGV: prefix, handle, agent,
// size, created ms, expires ms, now ms, ttl ms, max agent bytes, max
// agent entries, max bytes, body, meta.
//
// Book-keeping: <p>exp (zset handle → expires ms), <p>age (zset handle →
// created ms), <p>age:<agent> (zset), <p>info (hash handle →
// "size agent"), <p>bytes and <p>bytes:<agent> (counters).
var putScript = redis.NewScript(`
local p, h, agent = ARGV[1], ARGV[2], ARGV[3]
local size, created, expires, now, ttl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local maxAgent, maxAgentN, maxAll = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local function drop(x)
  local info = redis.call('HGET', p..'info', x)
  if not info then
    redis.call('ZREM', p..'exp', x) redis.call('ZREM', p..'age', x)
    return
  end
  local sp = string.find(info, ' ')
  local sz, a = tonumber(string.sub(info, 1, sp-1)), string.sub(info, sp+1)
  redis.call('DEL', p..'b:'..x, p..'m:'..x)
  redis.call('HDEL', p..'info', x)
  redis.call('ZREM', p..'exp', x) redis.call('ZREM', p..'age', x) redis.call('ZREM', p..'age:'..a, x)
  redis.call('DECRBY', p..'bytes', sz) redis.call('DECRBY', p..'bytes:'..a, sz)
end
for _, x in ipairs(redis.call('ZRANGEBYSCORE', p..'exp', '-inf', now)) do drop(x) end
redis.call('SET', p..'b:'..h, ARGV[12], 'PX', ttl)
redis.call('SET', p..'m:'..h, ARGV[13], 'PX', ttl)
redis.call('HSET', p..'info', h, size..' '..agent)
redis.call('ZADD', p..'exp', expires, h) redis.call('ZADD', p..'age', created, h) redis.call('ZADD', p..'age:'..agent, created, h)
redis.call('INCRBY', p..'bytes', size) redis.call('INCRBY', p..'bytes:'..agent, size)
while (tonumber(redis.call('GET', p..'bytes:'..agent)) > maxAgent or redis.call('ZCARD', p..'age:'..agent) > maxAgentN) and redis.call('ZCARD', p..'age:'..agent) > 1 do
  drop(redis.call('ZRANGE', p..'age:'..agent, 0, 0)[1])
end
while tonumber(redis.call('GET', p..'bytes')) > maxAll and redis.call('ZCARD', p..'age') > 1 do
  local x = redis.call('ZRANGE', p..'age', 0, 0)[1]
  if x == h then break end
  drop(x)
end
return 1
`)

// Put implements Store.
func (r *Redis) Put(ctx context.Context, scope Scope, tool string, body []byte, ttl time.Duration) (string, error) {
	if int64(len(body)) > r.limits.MaxResultBytes {
		return "", ErrTooLarge
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	now := r.now()
	h := NewHandle()
	meta, err := json.Marshal(Meta{Agent: scope.Agent, Conversation: scope.Conversation, Tool: tool, Size: int64(len(body)), Created: now, Expires: now.Add(ttl)})
	if err != nil {
		return "", err
	}
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	err = putScript.Run(ctx, r.c, nil, r.prefix, h, scope.Agent, len(body), ms(now), ms(now.Add(ttl)), ms(now), ttl.Milliseconds(),
		r.limits.MaxAgentBytes, r.limits.MaxAgentEntries, r.limits.MaxBytes, body, meta).Err()
	if err != nil {
		return "", errors.New("result store (Redis): " + err.Error())
	}
	return h, nil
}

// Open implements Store.
func (r *Redis) Open(ctx context.Context, scope Scope, handle string) (Body, bool, error) {
	if !ValidHandle(handle) {
		return nil, false, nil
	}
	raw, err := r.c.Get(ctx, r.prefix+"m:"+handle).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, errors.New("result store (Redis): " + err.Error())
	}
	var m Meta
	if json.Unmarshal(raw, &m) != nil || m.Agent != scope.Agent || m.Conversation != scope.Conversation || !r.now().Before(m.Expires) {
		return nil, false, nil
	}
	return &redisBody{ctx: ctx, c: r.c, key: r.prefix + "b:" + handle, size: m.Size}, true, nil
}

// redisBody reads a body by GETRANGE.
type redisBody struct {
	ctx  context.Context
	c    redis.UniversalClient
	key  string
	size int64
}

func (b *redisBody) ReadAt(p []byte, off int64) (int, error) {
	if off >= b.size {
		return 0, io.EOF
	}
	end := min(b.size, off+int64(len(p))) - 1
	s, err := b.c.GetRange(b.ctx, b.key, off, end).Result()
	if err != nil {
		return 0, err
	}
	n := copy(p, s)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (b *redisBody) Size() int64  { return b.size }
func (b *redisBody) Close() error { return nil }
