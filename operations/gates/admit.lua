-- The four gates of one call, checked and consumed atomically (see store.ts for the rules).
-- KEYS: 1 state (hash: t = bucket's theoretical arrival time; d, dc / m, mc = day / month and its calls;
--         w = day of the wallet set)  2 rolling minute (zset)  3 wallets of the day (set)
--       4 lane (zset, member = request id, score = lease expiry)  5 address block (string: blocked until, ms)
-- ARGV: 1 now ms ('' = Redis TIME)  2 emission interval ms  3 burst  4 rpm  5 rpm window ms
--       6 daily cap (0 = none)  7 monthly cap (0 = none)  8 wallet ('' = none)  9 wallet cap (-1 = unlimited)
--       10 heavy ('1'/'0')  11 lane cap  12 lease ms  13 request id
-- Returns {verdict, ...}; numbers that may be fractional travel as strings (Redis truncates Lua numbers).

-- `now`: now.lua, prepended.
local interval = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local rpm = tonumber(ARGV[4])
local rpm_window = tonumber(ARGV[5])
local daily_cap = tonumber(ARGV[6])
local monthly_cap = tonumber(ARGV[7])
local wallet = ARGV[8]
local wallet_cap = tonumber(ARGV[9])
local heavy = ARGV[10] == '1'
local lane_cap = tonumber(ARGV[11])
local lease = tonumber(ARGV[12])
local request_id = ARGV[13]

-- 0. address block (its value is the end of the block; the key's TTL only collects it)
local blocked_until = tonumber(redis.call('GET', KEYS[5]) or '0')
if blocked_until > now then
  return {'address_blocked', tostring(blocked_until - now)}
end

-- UTC calendar: day number, month id (yyyymm) and their ends (H. Hinnant's civil-from-days).
local day = math.floor(now / 86400000)
local day_ends = (day + 1) * 86400000
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m > 2) and (m - 3) or (m + 9)
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end
local z = day + 719468
local era = math.floor(z / 146097)
local doe = z - era * 146097
local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
local year = yoe + era * 400
local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
local mp = math.floor((5 * doy + 2) / 153)
local month = (mp < 10) and (mp + 3) or (mp - 9)
if month <= 2 then year = year + 1 end
local month_id = year * 100 + month
local month_ends
if month == 12 then month_ends = days_from_civil(year + 1, 1, 1) * 86400000 else month_ends = days_from_civil(year, month + 1, 1) * 86400000 end

local state = redis.call('HMGET', KEYS[1], 't', 'd', 'dc', 'm', 'mc', 'w')

-- 1. token bucket (GCRA)
local tat = tonumber(state[1] or '0')
if tat < now then tat = now end
local new_tat = tat + interval
local bucket_wait = new_tat - now - interval * burst

-- 2. rolling minute (exact): admissions in (now - window, now]
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - rpm_window)
local in_minute = redis.call('ZCARD', KEYS[2])
local minute_wait = 0
if in_minute >= rpm then
  local oldest = redis.call('ZRANGE', KEYS[2], in_minute - rpm, in_minute - rpm, 'WITHSCORES')
  minute_wait = tonumber(oldest[2]) + rpm_window - now
end
if bucket_wait > 0 or minute_wait > 0 then
  return {'rate_limited', tostring(math.max(bucket_wait, minute_wait))}
end

-- 3. call quota
local day_count = 0
if tonumber(state[2]) == day then day_count = tonumber(state[3]) end
local month_count = 0
if tonumber(state[4]) == month_id then month_count = tonumber(state[5]) end
if daily_cap > 0 and day_count >= daily_cap then
  return {'daily_limit', tostring(day_ends - now)}
end
if monthly_cap > 0 and month_count >= monthly_cap then
  return {'monthly_limit', tostring(month_ends - now)}
end

-- 4. admission lane (expired leases belonged to instances that died)
if heavy then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  if redis.call('ZCARD', KEYS[4]) >= lane_cap then
    return {'busy'}
  end
end

-- Consume the call. Key TTLs only collect idle users' keys (GC_MS of slack: the clock may be a test's,
-- which need not keep pace with Redis's); the values decide.
local GC_MS = 3600000
redis.call('ZADD', KEYS[2], now, request_id)
redis.call('PEXPIRE', KEYS[2], rpm_window + GC_MS)
if daily_cap > 0 then day_count = day_count + 1 end
if monthly_cap > 0 then month_count = month_count + 1 end
redis.call('HSET', KEYS[1], 't', tostring(new_tat), 'd', day, 'dc', day_count, 'm', month_id, 'mc', month_count)
redis.call('PEXPIRE', KEYS[1], math.ceil(month_ends - now) + GC_MS)
local tokens = (interval * burst - (new_tat - now)) / interval
local usage_tail = {tostring(tokens), in_minute + 1, day_count, month_count}

-- 5. distinct wallets of the UTC day
local wallet_state = 'none'
if wallet ~= '' and wallet_cap >= 0 then
  if tonumber(state[6]) ~= day then
    redis.call('DEL', KEYS[3])
    redis.call('HSET', KEYS[1], 'w', day)
  end
  if redis.call('SISMEMBER', KEYS[3], wallet) == 1 then
    wallet_state = 'free'
  else
    local used = redis.call('SCARD', KEYS[3])
    if used >= wallet_cap then
      return {'wallet_quota', usage_tail[1], usage_tail[2], usage_tail[3], usage_tail[4], used, wallet_cap, tostring(day_ends)}
    end
    redis.call('SADD', KEYS[3], wallet)
    redis.call('PEXPIRE', KEYS[3], math.ceil(day_ends - now) + GC_MS)
    wallet_state = 'counted'
  end
end

if heavy then
  redis.call('ZADD', KEYS[4], now + lease, request_id)
  redis.call('PEXPIRE', KEYS[4], lease + GC_MS)
end
return {'admitted', usage_tail[1], usage_tail[2], usage_tail[3], usage_tail[4], wallet_state, tostring(now)}
