--[[
echo (tests only, after the library's files but dispatch.lua): decode
ARGV[3] as the layout named ARGV[1] (snake case) with the prelude, and
reply {the layout packed again by Lua, "field=value" of every field}.
]]
local name, s = ARGV[1], ARGV[3]
local t
if wire['read_' .. name] then
  t = {}
  wire['read_' .. name](s, 1, t)
else
  t = wire[name](s)
  if not t then return redis.error_reply('ERR not a ' .. name) end
end
local fields = {}
for k, v in pairs(t) do
  if type(v) == 'number' then
    fields[#fields + 1] = k .. '=' .. string.format('%.17g', v)
  else
    fields[#fields + 1] = k .. '=#' .. #v
  end
end
return {wire['pack_' .. name](t), table.concat(fields, ';')}
