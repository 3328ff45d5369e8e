--[[
tollgate limiter: the stored state formats, prepended (by the Go side, after
clock.lua) to limiter.lua and quota.lua. States are binary strings packed
with Redis's struct library: packing a double is exact and costs a fraction
of string.format('%.17g') or tostring, and one MGET reads any number of
them.

Bucket state, one string per bucket: "\1" then '<dddd' = tokens t (float),
time l of t (Unix µs), rate r (tokens/s) and burst b the state was written
under.

Quota state, one string per key and plan: "\2" then '<ddd' = s the period
start (Unix s, the latest one seen), n requests admitted since, e the period
end (Unix s) the key's TTL was set for.

Anything else in such a key (another type, another length) counts as
absent and is replaced by the next write (SET replaces any type), so a
stray key never fails a decision.
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

-- quota_state(v) -> {s, n, e}, or false; v is the key's MGET value
local function quota_state(v)
  if v and #v == 25 and sbyte(v, 1) == QUOTA_MARK then
    local s, n, e = sunpack('<ddd', v, 2)
    return {s, n, e}
  end
  return false
end

local function quota_value(s)
  return spack('<Bddd', QUOTA_MARK, s[1], s[2], s[3])
end
