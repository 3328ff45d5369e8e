--[[
tollgate usage changes: the operations of the usage ledger's flush worker on
one usage change set (engine/usagesource.go, docs/usage.md). A change set is a
sorted set of one Redis Cluster slot (one set on one primary) whose members
are usage hash names; limits.lua adds a member when it counts into that
hash, scored by the UTC day it counted on (days since 1970-01-01, ZADD LT:
the earliest day not yet taken). A member the worker took is held: its
score becomes the hold's end, in Unix milliseconds times 1000 plus a
serial (so each hold has a score of its own, exact in a double), far above
any day. A member scored +inf is never taken.

op "hold": take up to ARGV[2] members that are ready (a day score, or a
hold that ended: score <= now in ms * 1000) and hold them for ARGV[3] ms.
  KEYS  1  the change set
  Reply: {hold score, now (Unix ms), member, its score before, ...}, or {}
  when nothing is ready. Scores are decimal strings (exact).
]]

local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function num(x) return string.format('%.0f', x) end

if ARGV[1] ~= 'hold' then
  return redis.error_reply('ERR tollgate usage.lua: unknown operation ' .. tostring(ARGV[1]))
end
local limit, hold_ms = tonumber(ARGV[2]), tonumber(ARGV[3])
local ready = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', num(now_ms * 1000), 'WITHSCORES', 'LIMIT', 0, limit)
if #ready == 0 then return {} end
local hold = (now_ms + hold_ms) * 1000
local top = redis.call('ZREVRANGEBYSCORE', KEYS[1], '(inf', '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
if #top == 2 and tonumber(top[2]) >= hold then hold = tonumber(top[2]) + 1 end
local out = {num(hold), num(now_ms)}
for i = 1, #ready, 2 do
  redis.call('ZADD', KEYS[1], num(hold), ready[i])
  out[#out + 1] = ready[i]
  out[#out + 1] = ready[i + 1]
end
return out
