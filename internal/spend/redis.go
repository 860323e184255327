package spend

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisLedger keeps the counters in Redis (CLLAMA_STATE_URL), shared by
// every replica: one hash per counter, cllama:<pod>:spend:<key>, with
// fields s (settled) and r (reserved), expiring a day after its window.
// Reserve and Settle are each one Lua script, so replicas admitting at
// once see each other's reservations whatever the interleaving. A
// replica that dies with requests in flight leaves their reservations
// until the window ends (the limit errs on the side of refusing).
type RedisLedger struct {
	c      *redis.Client
	prefix string
}

// NewRedisLedger returns the ledger of pod on c.
func NewRedisLedger(c *redis.Client, pod string) *RedisLedger {
	return &RedisLedger{c: c, prefix: "cllama:" + pod + ":spend:"}
}

// ARGV per key: limit, reserve, check (0/1), expire-at (unix ms, 0: none).
var reserveScript = redis.NewScript(`
for i = 1, #KEYS do
  if ARGV[4*i-1] == '1' then
    local s = tonumber(redis.call('HGET', KEYS[i], 's') or '0')
    local r = tonumber(redis.call('HGET', KEYS[i], 'r') or '0')
    if s + r >= tonumber(ARGV[4*i-3]) then
      return {i, tostring(s), tostring(r)}
    end
  end
end
for i = 1, #KEYS do
  redis.call('HINCRBY', KEYS[i], 'r', ARGV[4*i-2])
  if ARGV[4*i] ~= '0' then redis.call('PEXPIREAT', KEYS[i], ARGV[4*i]) end
end
return {0, '0', '0'}
`)

// ARGV per key: reserved, actual, expire-at.
var settleScript = redis.NewScript(`
local out = {}
for i = 1, #KEYS do
  local r = redis.call('HINCRBY', KEYS[i], 'r', -tonumber(ARGV[3*i-2]))
  if r < 0 then redis.call('HSET', KEYS[i], 'r', 0) end
  out[i] = tostring(redis.call('HINCRBY', KEYS[i], 's', ARGV[3*i-1]))
  if ARGV[3*i] ~= '0' then redis.call('PEXPIREAT', KEYS[i], ARGV[3*i]) end
end
return out
`)

func expireAt(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// Reserve implements Ledger.
func (l *RedisLedger) Reserve(ctx context.Context, cs []Charge) (int, int64, int64, error) {
	keys := make([]string, len(cs))
	args := make([]any, 0, 4*len(cs))
	for i, ch := range cs {
		keys[i] = l.prefix + ch.Key
		check := "0"
		if ch.Check {
			check = "1"
		}
		args = append(args, ch.Limit, ch.Reserve, check, expireAt(ch.Expires))
	}
	res, err := reserveScript.Run(ctx, l.c, keys, args...).Slice()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("budget ledger (CLLAMA_STATE_URL): %w", err)
	}
	if len(res) != 3 {
		return 0, 0, 0, fmt.Errorf("budget ledger (CLLAMA_STATE_URL): unexpected answer %v", res)
	}
	i, _ := res[0].(int64)
	s, _ := strconv.ParseInt(fmt.Sprint(res[1]), 10, 64)
	r, _ := strconv.ParseInt(fmt.Sprint(res[2]), 10, 64)
	return int(i) - 1, s, r, nil
}

// Settle implements Ledger.
func (l *RedisLedger) Settle(ctx context.Context, ss []Settlement) ([]int64, error) {
	keys := make([]string, len(ss))
	args := make([]any, 0, 3*len(ss))
	for i, s := range ss {
		keys[i] = l.prefix + s.Key
		args = append(args, s.Reserved, s.Actual, expireAt(s.Expires))
	}
	res, err := settleScript.Run(ctx, l.c, keys, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("budget ledger (CLLAMA_STATE_URL): %w", err)
	}
	out := make([]int64, len(res))
	for i, v := range res {
		out[i], _ = strconv.ParseInt(v, 10, 64)
	}
	return out, nil
}

// Spent implements Ledger.
func (l *RedisLedger) Spent(ctx context.Context, keys []string) ([]int64, error) {
	out := make([]int64, len(keys))
	for i, k := range keys {
		v, err := l.c.HGet(ctx, l.prefix+k, "s").Int64()
		if err != nil && err != redis.Nil {
			return nil, fmt.Errorf("budget ledger (CLLAMA_STATE_URL): %w", err)
		}
		out[i] = v
	}
	return out, nil
}
