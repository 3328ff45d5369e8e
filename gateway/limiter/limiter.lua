--[[
tollgate limiter: atomic, all-or-nothing decisions over token buckets and a
calendar quota (DESIGN.md 4.3), for a batch of requests in one script run on
one Redis primary, with EVALSHA. The Go side prepends clock.lua (now in µs,
period(), date_string()) and state.lua (the stored formats).

A batch is decided in order, each decision exactly as if it ran alone after
the ones before it: the states are read once (one MGET), kept in Lua tables
while the decisions run, and each changed key is written once at the end.
One run costs TIME, MGET, one SET per changed bucket or quota and one
HINCRBY per usage hash, however many decisions share those keys: a busy
stage or account bucket is read and written once per batch, not once per
request. Every decision of a batch sees the same now.

KEYS
  1..m        bucket and quota state strings (state.lua)
  m+1..       daily usage hashes
ARGV
  1  now in Unix microseconds, or "" to read Redis TIME (the "" case is the
     only one production builds send; the test clock sends a time)
  2  D, the number of decisions
  3  m, the number of state keys
  4  the decisions, packed little-endian one after the other (Go: batch.go):
       '<BBHi4BBH' nb buckets, plan (1-based index of the caller's plan
                   bucket among them, 0: none), quota key index (0: none),
                   quota limit (requests), period (0 DAY, 1 WEEK, 2 MONTH),
                   offset (days), usage index u (0: none; the hash is
                   KEYS[m + u])
       nb x '<Hdi4' bucket key index, rate (tokens/s, the float64 itself),
                   burst (tokens)
Reply: one string, per decision '<i8' x 9:
  1 allowed (1/0)     2 refusing index (0 none, i bucket i, nb+1 quota)
  3 now (µs)          4 retry-after (µs; 0 when allowed; -1 never: rate 0)
  5 plan bucket whole tokens left (-1: no plan bucket)
  6 plan bucket µs until full (-1: never, rate 0 and not full)
  7 quota remaining after this request (-1: no quota)
  8 quota period start, 9 quota period end (Unix seconds)

Algorithm. A token bucket per bucket key: capacity burst, refill rate
tokens/s, starting full, one token per request (the classic token bucket,
e.g. RFC 2697's committed bucket; go-redis/redis_rate's GCRA is equivalent
but keeps no explicit token count). Tokens at time now under the stored
limits: min(b, t + (now-l)*r/1e6); time is integer microseconds, so the
only rounding is in that product, and a token counts as present when
tokens >= 1 - EPS (EPS = 1e-9 token, i.e. at most 1 µs early at rate
0.001/s): BC-03's 10/13 per second at t = 1.3 s is admitted although
1.3 * 0.7692307692307693 may be 0.99999999999999989.
Limit changes: when the request's rate/burst differ from the stored ones,
tokens = min(tokens under the stored limits up to now, new burst) and the
state is rebased to the new limits at now (written even on a refusal; that
charges nothing). State whose expiry moment has passed (full again + 1 s, or
400 days at rate 0) counts as absent, so the script behaves exactly as if
Redis had expired the key, whatever clock the caller uses.

Quota: UTC calendar periods of the current time, computed here by
clock.lua's period() (no key name holds a time): DAY from 00:00; WEEK from
Sunday + offset days; MONTH from the 1st + offset days. A period that starts
after the stored start resets the count; a lower limit gives remaining
max(0, limit - n).

Admission needs a token in every bucket and n + 1 <= limit; then every
bucket loses one token, n grows by one and the usage hash field for today
("YYYY-MM-DD", UTC) grows by one. Every write sets its TTL in the same run:
bucket until full again + 1 s (400 days at rate 0; SET PX ms); quota until
its period end + 1 hour (SET PX ms, or KEEPTTL when the state says the TTL
was already set for this period end); usage 100 days (EXPIRE s, with the
first count of each UTC day, when fields older than 100 days are deleted).

Cluster (DESIGN.md 9): this script expects every key on one node (the Go
side refuses a Redis Cluster URL). TODO: on Redis Cluster, batch per slot,
run the per-key part (plan bucket, quota, usage: one slot) per key and take
the shared stage and account buckets first, giving them back if the
per-key part refuses.
]]

local EPS = 1e-9
local SLACK_US = 1000000
local RATE0_TTL_US = 400 * 86400 * US
local QUOTA_MARGIN_S = 3600
local USAGE_TTL_S = 100 * 86400
local USAGE_KEEP_DAYS = 100
local PERIODS = {[0] = 'DAY', [1] = 'WEEK', [2] = 'MONTH'}
local mmin, mmax, mfloor, mceil = math.min, math.max, math.floor, math.ceil

-- ceil with a tolerance of 1 ns for float noise in a µs amount
local function ceil_us(x) return mceil(x - 1e-3) end

-- µs from a state (tokens t, rate r, burst b) until the bucket is full;
-- -1 when it never will be (rate 0 and not full)
local function until_full(t, r, b)
  if t >= b then return 0 end
  if r <= 0 then return -1 end
  return ceil_us((b - t) * US / r)
end

-- µs from the state's time until its key may expire
local function ttl_us(t, r, b)
  local f = until_full(t, r, b)
  if f < 0 then return RATE0_TTL_US end
  return f + SLACK_US
end

local ndec = tonumber(ARGV[2])
local m = tonumber(ARGV[3])
local spec = ARGV[4]
local days = mfloor(now / US / 86400)

-- every state in one read (MGET answers false for an absent key and for a
-- key of another type), in chunks that stay within Lua's unpack limit
local vals = {}
for i = 1, m, 1000 do
  local part = redis.call('MGET', unpack(KEYS, i, mmin(m, i + 999)))
  for j = 1, #part do vals[i + j - 1] = part[j] end
end

-- States by key index, decoded on first use: buckets {t, l, r, b}, quotas
-- {s, n, e}, false when absent. order lists the changed ones, to write once.
local states, dirty, order, ndirty = {}, {}, {}, 0
local function state(ki, decode)
  local s = states[ki]
  if s == nil then
    s = decode(ki)
    states[ki] = s
  end
  return s
end
local function bucket_decode(ki) return bucket_state(vals[ki]) end
-- quota key index -> the period end its TTL was set for
local ttl_end = {}
local function quota_decode(ki)
  local q = quota_state(vals[ki])
  if q then ttl_end[ki] = q[3] end
  return q
end
local function mark(ki)
  if not dirty[ki] then
    ndirty = ndirty + 1
    dirty[ki] = true
    order[ndirty] = ki
  end
end
-- put_bucket(ki, t, l, r, b) stores a bucket state, in place when one is
-- already in the table
local function put_bucket(ki, t, l, r, b)
  mark(ki)
  local s = states[ki]
  if s then
    s[1], s[2], s[3], s[4] = t, l, r, b
  else
    states[ki] = {t, l, r, b}
  end
end

-- quota period bounds by (period, offset): every decision has the same now
local bounds = {}
local function quota_bounds(code, offset)
  local k = code * 256 + offset
  local b = bounds[k]
  if not b then
    local s, e = period(days, PERIODS[code] or 'DAY', offset)
    b = {s, e}
    bounds[k] = b
  end
  return b[1], b[2]
end

local usage = {} -- usage key index -> admitted requests in this batch
local usage_order, nusage = {}, 0
local out = {}
local kis, rates, bursts, tokens, times, rebase = {}, {}, {}, {}, {}, {}
local pos = 1
for d = 1, ndec do
  local nb, plan, qki, qlimit, qcode, qoff, uki
  nb, plan, qki, qlimit, qcode, qoff, uki, pos = sunpack('<BBHi4BBH', spec, pos)

  -- Buckets: tokens now, and whether the state must be rebased.
  local refused = 0
  for i = 1, nb do
    local ki, r, b
    ki, r, b, pos = sunpack('<Hdi4', spec, pos)
    kis[i], rates[i], bursts[i] = ki, r, b
    local t, tt, rb = b, now, false
    local s = state(ki, bucket_decode)
    if s then
      local st, sl, sr, sb = s[1], s[2], s[3], s[4]
      if now < sl + ttl_us(st, sr, sb) then
        if now > sl then st = mmin(sb, st + (now - sl) * sr / US) end
        t = mmin(st, b)
        tt = mmax(sl, now) -- time went back (failover): refill nothing twice
        rb = (sr ~= r) or (sb ~= b)
      end
    end
    tokens[i], times[i], rebase[i] = t, tt, rb
    if refused == 0 and t < 1 - EPS then refused = i end
  end

  -- Quota: used count in the current period. The stored start is the
  -- latest period start seen: the count goes on unless the current period
  -- starts after it (so a clock that went back across a period edge, or a
  -- period change, never resets it early).
  local used, sstart, pstart, pend = 0, 0, 0, 0
  if qki > 0 then
    pstart, pend = quota_bounds(qcode, qoff)
    local q = state(qki, quota_decode)
    sstart = pstart
    if q and q[1] >= pstart then used, sstart = q[2], q[1] end
    if refused == 0 and used + 1 > qlimit then refused = nb + 1 end
  end

  local allowed = (refused == 0)
  if allowed then
    for i = 1, nb do
      tokens[i] = mmax(0, tokens[i] - 1)
      put_bucket(kis[i], tokens[i], times[i], rates[i], bursts[i])
    end
    if qki > 0 then
      used = used + 1
      mark(qki)
      local q = states[qki]
      if q then
        q[1], q[2], q[3] = sstart, used, pend
      else
        states[qki] = {sstart, used, pend}
      end
    end
    if uki > 0 then
      if not usage[uki] then
        usage[uki] = 0
        nusage = nusage + 1
        usage_order[nusage] = uki
      end
      usage[uki] = usage[uki] + 1
    end
  else
    for i = 1, nb do
      if rebase[i] then put_bucket(kis[i], tokens[i], times[i], rates[i], bursts[i]) end
    end
  end

  local retry = 0
  if refused >= 1 and refused <= nb then
    local r = rates[refused]
    -- refill starts at times[i], later than now only if time went back
    if r > 0 then retry = mmax(1, times[refused] - now + ceil_us((1 - tokens[refused]) * US / r)) else retry = -1 end
  elseif refused == nb + 1 then
    retry = pend * US - now
  end

  local premain, pfull = -1, -1
  if plan >= 1 then
    premain = mfloor(tokens[plan] + EPS)
    pfull = until_full(tokens[plan], rates[plan], bursts[plan])
    if pfull > 0 then pfull = pfull + times[plan] - now end
  end
  local qremain, qs, qe = -1, 0, 0
  if qki > 0 then
    qremain, qs, qe = mmax(0, qlimit - used), pstart, pend
  end
  out[d] = spack('<i8i8i8i8i8i8i8i8i8', allowed and 1 or 0, refused, now, retry, premain, pfull, qremain, qs, qe)
end

-- Writes, one per changed key, each with its TTL (at least SLACK_US ahead
-- for a bucket, so PX is always > 0).
for j = 1, ndirty do
  local ki = order[j]
  local s = states[ki]
  if #s == 4 then
    redis.call('SET', KEYS[ki], bucket_value(s), 'PX', mceil((s[2] + ttl_us(s[1], s[3], s[4]) - now) / 1000))
  else
    -- the TTL ends at a fixed moment (period end + margin); keep it when
    -- the stored state says it was set for this period end
    if ttl_end[ki] == s[3] then
      redis.call('SET', KEYS[ki], quota_value(s), 'KEEPTTL')
    else
      redis.call('SET', KEYS[ki], quota_value(s), 'PX', mceil(((s[3] + QUOTA_MARGIN_S) * US - now) / 1000))
    end
  end
end

-- Usage: only this script writes the usage hash, so its TTL is renewed
-- with the first count of each UTC day, when old days are pruned too.
if nusage > 0 then
  local today = date_string(days)
  for j = 1, nusage do
    local uki = usage_order[j]
    local ukey, c = KEYS[m + uki], usage[uki]
    -- pcall: a key of another type (not written by tollgate) loses its
    -- count rather than failing every decision of the batch
    if redis.pcall('HINCRBY', ukey, today, c) == c then
      local cutoff = date_string(days - USAGE_KEEP_DAYS)
      for _, f in ipairs(redis.call('HKEYS', ukey)) do
        if f < cutoff then redis.call('HDEL', ukey, f) end
      end
      redis.call('EXPIRE', ukey, USAGE_TTL_S)
    end
  end
end

return table.concat(out)
