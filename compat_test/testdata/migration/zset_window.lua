-- KEYS[1]: the key. ARGV: now in ms, window in ms, limit, a unique id for this request.
-- Returns {1, remaining} when admitted, {0, 0} when refused; a refused request is not recorded.
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  return {0, 0}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return {1, limit - count - 1}
