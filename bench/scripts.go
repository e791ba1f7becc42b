package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// gcraScript is redis-cell 0.5's GCRA (CL.THROTTLE) as a Redis script, the
// way teams write it where the module cannot be loaded (the "GCRA in Lua"
// pattern: the clock is redis.call('TIME'), one GET and one SET a call). It
// is a port of redis-cell's rate_limit, not of any one published script:
// the key holds the theoretical arrival time (TAT) in nanoseconds since the
// epoch, as redis-cell stores it, with the expiry redis-cell sets, and the
// reply is CL.THROTTLE's five integers, rounded as redis-cell rounds them.
//
//	EVALSHA <sha> 1 key max_burst count period [quantity]
//
// Times are kept in microseconds, which a Lua number (a double) holds
// exactly until the year 2255; the emission interval, truncated to whole
// nanoseconds as redis-cell truncates it, keeps its fraction of a
// microsecond, which the stored TAT's last three digits carry. Unlike
// redis-cell it does not reproduce the wrapping arithmetic of extreme
// arguments, and a quantity-0 peek that leaves a TAT within the current
// millisecond deletes the key (Redis refuses PX 0) where redis-cell keeps it
// for that millisecond: neither case is met by a benchmark.
const gcraScript = `
local key = KEYS[1]
local max_burst = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local quantity = tonumber(ARGV[4] or '1')
if count == 0 or period == 0 then
  return redis.error_reply('Cell error: zero rates are not supported')
end

-- a number of microseconds in seconds, truncated, plus one when a
-- millisecond or more is left over: redis-cell's rounding
local function seconds(us)
  local s = us / 1000000
  if s >= 0 then s = math.floor(s) else s = math.ceil(s) end
  if us - s * 1000000 >= 1000 then s = s + 1 end
  return s
end
local function trunc(x)
  if x >= 0 then return math.floor(x) end
  return math.ceil(x)
end

local emission = math.floor(period * 1e9 / count) / 1000 -- us, whole ns
local limit = max_burst + 1
local dvt = emission * limit -- delay variation tolerance
local increment = emission * quantity

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = now
local stored = redis.call('GET', key)
if stored then
  tat = tonumber(string.sub(stored, 1, -4)) + tonumber(string.sub(stored, -3)) / 1000
end

local new_tat = math.max(tat, now) + increment
local diff = now - (new_tat - dvt)
local limited, retry_after, ttl = 0, -1, 0
if diff < 0 then
  limited = 1
  if increment <= dvt then retry_after = seconds(-diff) end
  ttl = tat - now
else
  ttl = new_tat - now
  local ms = math.floor(ttl / 1000)
  if ms > 0 then
    local us = math.floor(new_tat)
    redis.call('SET', key, string.format('%.0f%03d', us, math.floor((new_tat - us) * 1000)), 'PX', ms)
  else
    redis.call('DEL', key)
  end
end

local remaining = 0
local left = dvt - ttl
if left > -emission then remaining = trunc(trunc(left) / trunc(emission)) end
return {limited, limit, remaining, retry_after, seconds(ttl)}
`

// zsetScript is the sliding-window limiter teams write by hand on Redis: a
// sorted set per key with one member per admitted request, scored by its
// arrival in milliseconds; ZREMRANGEBYSCORE drops what left the window,
// ZCARD counts the rest, ZADD records the request and PEXPIRE keeps the key
// as long as its newest request counts. A request at t counts until
// t + window, as SW.THROTTLE counts it.
//
//	EVALSHA <sha> 1 key limit window_ms  ->  {limited, limit, remaining}
//
// The member is the arrival in microseconds and the count before it: two
// calls on one key within a microsecond see different counts, so members
// never collide.
const zsetScript = `
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if count >= limit then
  return {1, limit, 0}
end
redis.call('ZADD', key, now, t[1] .. string.format('%06d', tonumber(t[2])) .. '-' .. count)
redis.call('PEXPIRE', key, window)
return {0, limit, limit - count - 1}
`

// scripts are the SHA1s of the loaded scripts.
type scripts struct {
	gcra, zset string
}

// loadScripts loads both scripts into the Redis at addr with SCRIPT LOAD.
func loadScripts(ctx context.Context, addr string) (scripts, error) {
	rdb := newClient(addr, 1)
	defer rdb.Close()
	var s scripts
	var err error
	if s.gcra, err = rdb.ScriptLoad(ctx, gcraScript).Result(); err != nil {
		return s, fmt.Errorf("SCRIPT LOAD the GCRA script: %w", err)
	}
	if s.zset, err = rdb.ScriptLoad(ctx, zsetScript).Result(); err != nil {
		return s, fmt.Errorf("SCRIPT LOAD the ZSET script: %w", err)
	}
	return s, nil
}

// newClient is a go-redis client of addr with pool connections, speaking
// RESP2 and sending nothing but the commands it is given.
func newClient(addr string, pool int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:             addr,
		Protocol:         2,
		DisableIndentity: true,
		PoolSize:         pool,
		MaxRetries:       -1,
		ReadTimeout:      time.Minute,
		WriteTimeout:     time.Minute,
	})
}
