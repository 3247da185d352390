-- One failed authentication from an address: counted in a rolling window; at the limit the address is
-- blocked. A blocked address's further failures are not counted (the block runs its course).
-- KEYS: 1 failures (zset of failure ids scored by time)  2 block (string: blocked until, ms)
-- ARGV: 1 now ms ('' = Redis TIME)  2 limit  3 window ms  4 block ms  5 failure id
-- `now`: now.lua, prepended.
local blocked_until = tonumber(redis.call('GET', KEYS[2]) or '0')
if blocked_until > now then
  return {'blocked', tostring(blocked_until - now)}
end
local window = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, ARGV[5])
local failures = redis.call('ZCARD', KEYS[1])
if failures >= tonumber(ARGV[2]) then
  -- The value is the end of the block (the clock may be a test's); the TTL only collects the key.
  redis.call('SET', KEYS[2], tostring(now + tonumber(ARGV[4])), 'PX', tonumber(ARGV[4]) + 3600000)
  redis.call('DEL', KEYS[1])
  return {'recorded', failures, 1}
end
redis.call('PEXPIRE', KEYS[1], window + 3600000)
return {'recorded', failures, 0}
