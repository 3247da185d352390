-- Every gate script's clock: `now` in ms from ARGV[1], or Redis TIME when it is '' (the caller's clock is a test's).
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
