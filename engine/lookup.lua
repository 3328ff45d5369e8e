-- lookup.lua: read the variant of a response cache entry that matches a
-- request (docs/behaviour.md, "Response cache"), in one round trip.
--
-- KEYS[1]  the entry hash (cache.Key): field "vary" holds the Vary names
--          of the stored response (lowercase, sorted, comma-separated,
--          "" for none); every other field is one variant, named as
--          cache.Variant names it.
-- ARGV[1]  the request headers, one "<name>:<value>\n" line each: names
--          lowercase, values as cache.VaryValue normalises them.
-- Returns  the encoded entry (cache.Entry), or '' when there is none (not
--          nil, which the client would make an error of).
local vary = redis.call('HGET', KEYS[1], 'vary')
if not vary then
  return ''
end
local h = {}
for line in string.gmatch(ARGV[1], '[^\n]+') do
  local name, v = string.match(line, '^([^:]*):(.*)$')
  if name then
    h[name] = v
  end
end
local field = 'v'
for name in string.gmatch(vary, '[^,]+') do
  local v = h[name]
  if v then
    field = field .. '\n' .. name .. ':' .. v
  else
    field = field .. '\n' .. name .. '!'
  end
end
return redis.call('HGET', KEYS[1], field) or ''
