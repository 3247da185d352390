-- Gives back what one admitted call consumed (see store.ts, refund): found by its request id in the
-- rolling minute, so a second refund of the same call finds nothing and changes nothing.
-- KEYS: 1 state (hash, as admit.lua)  2 rolling minute (zset)  3 wallets of the day (set)  4 lane (zset)
-- ARGV: 1 request id  2 emission interval ms  3 day of the admission  4 its month id (yyyymm)
--       5 daily ('1'/'0')  6 monthly ('1'/'0')  7 wallet it counted ('' = none)
-- Returns 1 when something was given back, 0 when the call was unknown (already refunded, or expired).

redis.call('ZREM', KEYS[4], ARGV[1])
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
  return 0
end
local state = redis.call('HMGET', KEYS[1], 't', 'd', 'dc', 'm', 'mc', 'w')
local tat = tonumber(state[1] or '0') - tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 't', tostring(tat))
local day = tonumber(ARGV[3])
if ARGV[5] == '1' and tonumber(state[2]) == day and tonumber(state[3] or '0') > 0 then
  redis.call('HINCRBY', KEYS[1], 'dc', -1)
end
if ARGV[6] == '1' and tonumber(state[4]) == tonumber(ARGV[4]) and tonumber(state[5] or '0') > 0 then
  redis.call('HINCRBY', KEYS[1], 'mc', -1)
end
if ARGV[7] ~= '' and tonumber(state[6]) == day then
  redis.call('SREM', KEYS[3], ARGV[7])
end
return 1
