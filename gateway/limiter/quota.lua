--[[
tollgate limiter: read or set the remaining quota of one key in the current
period (UpdateUsage, DESIGN.md 7). The Go side prepends clock.lua and state.lua.

KEYS
  1  quota state (state.lua), as limiter.lua writes it
ARGV
  1  now in Unix microseconds, or "" to read Redis TIME
  2  quota limit (requests)
  3  period: "DAY", "WEEK" or "MONTH"
  4  offset in days
  5  "" to only read; else the new remaining, already clamped to 0..limit:
     the state becomes (current period start, limit - remaining, period
     end), with a TTL of the period end + 1 hour, exactly as limiter.lua
     writes it
Reply: {remaining, period start (s), period end (s), now (µs)}, remaining
being max(0, limit - n) (n = 0 when the state is of an older period).
]]

local QUOTA_MARGIN_S = 3600

local limit = tonumber(ARGV[2])
local pstart, pend = period(math.floor(now / US / 86400), ARGV[3], tonumber(ARGV[4]))
-- as limiter.lua: the stored start is the latest period start seen
local used, sstart = 0, pstart
local q = quota_state(redis.call('MGET', KEYS[1])[1])
if q and q[1] >= pstart then used, sstart = q[2], q[1] end
if ARGV[5] ~= '' then
  used = limit - tonumber(ARGV[5])
  redis.call('SET', KEYS[1], quota_value({sstart, used, pend}), 'PX', math.ceil(((pend + QUOTA_MARGIN_S) * US - now) / 1000))
end
return {math.max(0, limit - used), pstart, pend, now}
