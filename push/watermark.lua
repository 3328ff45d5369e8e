-- watermark.lua: raise the watermark, never lower it.
--
-- KEYS[1]  <prefix>:config:version, a decimal integer (absent: none)
-- ARGV[1]  the config version now fully published
--
-- Returns 1 when raised, 0 when the stored watermark is at least ARGV[1].
local cur = tonumber(redis.call('GET', KEYS[1]))
if cur and cur >= tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
