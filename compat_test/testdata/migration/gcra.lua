-- KEYS[1]: the key. ARGV: burst, rate (requests per period), period in seconds, cost.
-- Returns {allowed, remaining, retry_after, reset_after}, times in seconds as strings.
local burst, rate, period, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local emission = period / rate
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local tat = math.max(tonumber(redis.call('GET', KEYS[1])) or now, now)
local new_tat = tat + emission * cost
local diff = now - (new_tat - emission * burst)
local remaining = math.floor(diff / emission)
if remaining < 0 then
  return {0, 0, tostring(-diff), tostring(tat - now)}
end
redis.call('SET', KEYS[1], tostring(new_tat), 'EX', math.ceil(new_tat - now))
return {cost, remaining, '-1', tostring(new_tat - now)}
