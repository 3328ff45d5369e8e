--[[
tollgate limiter: the stored state formats, prepended (by the Go side, after
clock.lua) to limiter.lua and quota.lua. States are binary strings packed
with Redis's struct library: packing a double is exact and costs a fraction
of string.format('%.17g') or tostring, and one MGET reads any number of
them.

Bucket state, one string per bucket: "\1" then '<dddd' = tokens t (float),
time l of t (Unix µs), rate r (tokens/s) and burst b the state was written
under. Anything else (the text "t l r b" of an earlier version, a hash)
counts as absent, so after that upgrade each bucket starts full once.

Quota state, one string per key and plan: "\2" then '<ddd' = s the period
start (Unix s, the latest one seen), n requests admitted since, e the period
end (Unix s) the key's TTL was set for. A quota written by an earlier
version is a hash with fields s, n, e: MGET answers false for it, and
quota_state then reads it with HMGET (one more call, only for a key without
a current state), so the count of the current period survives an upgrade.
The other way does not work: a node of that earlier version answers
WRONGTYPE for a quota this version wrote, so an upgrade stops every node of
the earlier version before the first node of this one starts (no mixed
rolling upgrade across this change).
]]

local BUCKET_MARK, QUOTA_MARK = 1, 2
local spack, sunpack, sbyte = struct.pack, struct.unpack, string.byte

-- bucket_state(v) -> {t, l, r, b}, or false
local function bucket_state(v)
  if v and #v == 33 and sbyte(v, 1) == BUCKET_MARK then
    local t, l, r, b = sunpack('<dddd', v, 2)
    return {t, l, r, b}
  end
  return false
end

local function bucket_value(s)
  return spack('<Bdddd', BUCKET_MARK, s[1], s[2], s[3], s[4])
end

-- quota_state(key, v) -> {s, n, e}, or false; v is the key's MGET value
local function quota_state(key, v)
  if v and #v == 25 and sbyte(v, 1) == QUOTA_MARK then
    local s, n, e = sunpack('<ddd', v, 2)
    return {s, n, e}
  end
  if not v then
    -- pcall: a key of another type than hash counts as absent (SET then
    -- replaces it) instead of failing the whole batch
    local h = redis.pcall('HMGET', key, 's', 'n', 'e')
    if h[1] and h[2] and not h.err then
      return {tonumber(h[1]), tonumber(h[2]), tonumber(h[3]) or 0}
    end
  end
  return false
end

local function quota_value(s)
  return spack('<Bddd', QUOTA_MARK, s[1], s[2], s[3])
end
