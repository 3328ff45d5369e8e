--[[
dispatch: the last file of the library. ARGV[1] names the operation; its
file documents KEYS and ARGV. Takes settle, quota, hold (usage.lua), decide
(decide.lua), refund, unlease, unrules, renew (give.lua).
]]

local ops = {decide = decide, refund = refund, unlease = unlease, unrules = unrules, renew = renew,
  settle = settle, quota = quota, hold = hold}
local run = ops[ARGV[1]]
if not run then return redis.error_reply('ERR tollgate script: unknown operation ' .. tostring(ARGV[1])) end
return run()
