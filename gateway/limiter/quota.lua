--[[
tollgate limiter: read or set the remaining quota of one key in the current
period (UpdateUsage, DESIGN.md 7). The Go side prepends clock.lua.

KEYS
  1  quota state hash (fields s: period start, Unix seconds; n: requests
     counted in that period), as limiter.lua
ARGV
  1  now in Unix microseconds, or "" to read Redis TIME
  2  quota limit (requests)
  3  period: "DAY", "WEEK" or "MONTH"
  4  offset in days
  5  "" to only read; else the new remaining, already clamped to 0..limit:
     the state becomes (current period start, limit - remaining), with a TTL
     of the period end + 1 hour (PEXPIRE ms), exactly as limiter.lua writes
Reply: {remaining, period start (s), period end (s), now (µs)}, remaining
being max(0, limit - n) (n = 0 when the state is of an older period).
]]

local QUOTA_MARGIN_S = 3600

local limit = tonumber(ARGV[2])
local pstart, pend = period(math.floor(now / US / 86400), ARGV[3], tonumber(ARGV[4]))
-- as limiter.lua: the stored start is the latest period start seen
local used, sstart = 0, pstart
local s = redis.call('HMGET', KEYS[1], 's', 'n')
if s[1] and tonumber(s[1]) >= pstart then used, sstart = tonumber(s[2]), tonumber(s[1]) end
if ARGV[5] ~= '' then
  used = limit - tonumber(ARGV[5])
  redis.call('HSET', KEYS[1], 's', string.format('%.17g', sstart), 'n', string.format('%.17g', used))
  redis.call('PEXPIRE', KEYS[1], string.format('%.17g', math.ceil(((pend + QUOTA_MARGIN_S) * US - now) / 1000)))
end
return {math.max(0, limit - used), pstart, pend, now}
