-- cas.lua: store a versioned JSON document only if it is newer than the
-- stored one (compare-and-set on the version), so that several publishers
-- never move a document backwards.
--
-- KEYS[1]  the document: <prefix>:config:snapshot or <prefix>:key:{<hash>}
-- ARGV[1]  the new document's version, a decimal integer
-- ARGV[2]  the new document, JSON whose text starts with {"version":<ARGV[1]>
-- ARGV[3]  time to live in milliseconds; 0 for none (clears any old TTL)
--
-- Returns 1 when written, 0 when the stored document's version is at least
-- ARGV[1]. The stored version is read from the text's leading "version"
-- member, which the Go side always writes first, so a snapshot of megabytes
-- is never decoded here. A stored value that does not start so is replaced.
local cur = redis.call('GET', KEYS[1])
if cur then
  local v = tonumber(string.match(cur, '^{"version":(%-?%d+)'))
  if v and v >= tonumber(ARGV[1]) then
    return 0
  end
end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
