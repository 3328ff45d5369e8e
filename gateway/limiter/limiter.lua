--[[
tollgate limiter: one atomic, all-or-nothing decision over token buckets and
a calendar quota (DESIGN.md 4.3). Runs on one Redis primary, with EVALSHA.
The Go side prepends clock.lua, which defines now (µs), period() and
date_string().

KEYS
  1..n        bucket state strings, in check order (plan or plan-method,
              stage, account)
  n+1         quota state hash        (only when ARGV[4] >= 0)
  next        daily usage hash        (only when ARGV[7] == "1")
ARGV
  1  now in Unix microseconds, or "" to read Redis TIME (the "" case is the
     only one production builds send; the test clock sends a time)
  2  n, the number of buckets
  3  1-based index of the caller's plan bucket, whose state is returned
     (0: none)
  4  quota limit in requests (-1: no quota)
  5  quota period: "DAY", "WEEK" or "MONTH" (anything else: DAY)
  6  quota offset in days
  7  "1" to count the request in the usage hash, else "0"
  8+2(i-1), 9+2(i-1)   bucket i: rate (tokens/s: the shortest decimal that
     parses back to the same float64, strconv 'f' -1, never round-tripped
     through Lua's tostring) and burst (tokens, integer)
Reply: an array of 9 integers
  1 allowed (1/0)     2 refusing index (0 none, i bucket i, n+1 quota)
  3 now (µs)          4 retry-after (µs; 0 when allowed; -1 never: rate 0)
  5 plan bucket whole tokens left (-1: no plan bucket)
  6 plan bucket µs until full (-1: never, rate 0 and not full)
  7 quota remaining after this request (-1: no quota)
  8 quota period start, 9 quota period end (Unix seconds)

Algorithm. A token bucket per bucket key: capacity burst, refill rate
tokens/s, starting full, one token per request (the classic token bucket,
e.g. RFC 2697's committed bucket; compare go-redis/redis_rate's GCRA, which
is equivalent but keeps no explicit token count). State: one string
"t l r b" per bucket (read for all buckets with one MGET, written with one
SET ... PX: two Redis calls per bucket instead of three, which is most of
the script's cost; each redis.call costs a few µs however small its work):
  t  tokens (float, written with %.17g so it round-trips exactly)
  l  time of t (µs; never moves back if Redis time does)
  r  rate as sent by Go     b  burst
Tokens at time now under the stored limits: min(b, t + (now-l)*r/1e6); time
is integer microseconds, so the only rounding is in that product, and a
token counts as present when tokens >= 1 - EPS (EPS = 1e-9 token, i.e. at
most 1 µs early at rate 0.001/s): BC-03's 10/13 per second at t = 1.3 s is
admitted although 1.3 * 0.7692307692307693 may be 0.99999999999999989.
Limit changes: when the request's rate/burst differ from the stored ones,
tokens = min(tokens under the stored limits up to now, new burst) and the
state is rebased to the new limits at now (written even on a refusal; that
charges nothing). State whose expiry moment has passed (full again + 1 s, or
400 days at rate 0) counts as absent, so the script behaves exactly as if
Redis had expired the key, whatever clock the caller uses.

Quota: UTC calendar periods of the current time, computed in the script by
clock.lua's period() (no key name holds a time): DAY from 00:00; WEEK from
Sunday + offset days; MONTH from the 1st + offset days. State hash fields: s period start (Unix
seconds; the latest one seen), n requests admitted since, e the period end
(Unix seconds) its TTL was last set for. A period that
starts after s resets n; a lower limit gives remaining max(0, limit - n).

Admission needs a token in every bucket and n + 1 <= limit; then every
bucket loses one token, n grows by one and the usage hash field for today
("YYYY-MM-DD", UTC) grows by one, all in this script. Every write sets its
TTL in the same script: bucket until full again + 1 s (400 days at rate 0,
SET PX ms); quota until its period end + 1 hour (PEXPIRE ms, only when e
differs: the moment is fixed for a period); usage 100 days (EXPIRE s, with
the first count of each UTC day, when fields older than 100 days are
deleted). So an admitted keyed request with three buckets and a quota makes 8 Redis calls:
TIME, MGET, HMGET, 3 SET, HSET, HINCRBY.

Cluster (DESIGN.md 9): this script expects every key on one node. TODO: on
Redis Cluster, run the per-key part (plan bucket, quota, usage: one slot)
here and take the shared stage and account buckets first in the same
pipeline, giving them back if the per-key part refuses.
]]

local EPS = 1e-9
local SLACK_US = 1000000
local RATE0_TTL_US = 400 * 86400 * US
local QUOTA_MARGIN_S = 3600
local USAGE_TTL_S = 100 * 86400
local USAGE_KEEP_DAYS = 100

local function fmt(x) return string.format('%.17g', x) end

-- ceil with a tolerance of 1 ns for float noise in a µs amount
local function ceil_us(x) return math.ceil(x - 1e-3) end

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

local n = tonumber(ARGV[2])
local plan = tonumber(ARGV[3])
local qlimit = tonumber(ARGV[4])

-- Buckets: tokens now, and whether the state must be rebased to new limits.
-- All bucket states in one read (MGET: false for an absent key, and for a
-- key of another type: the hash of a version before this format counts as
-- absent, so after that upgrade each bucket starts full once).
local tokens, rates, bursts, rebase, times = {}, {}, {}, {}, {}
local refused = 0
local states = {}
if n > 0 then states = redis.call('MGET', unpack(KEYS, 1, n)) end
for i = 1, n do
  local rs = ARGV[6 + 2 * i]
  local r, b = tonumber(rs), tonumber(ARGV[7 + 2 * i])
  rates[i], bursts[i] = r, b
  local s1, s2, s3, s4
  if states[i] then s1, s2, s3, s4 = string.match(states[i], '^(%S+) (%S+) (%S+) (%S+)$') end
  local t, tt = b, now
  if s1 then
    local st, sl, sr, sb = tonumber(s1), tonumber(s2), tonumber(s3), tonumber(s4)
    if now < sl + ttl_us(st, sr, sb) then
      if now > sl then st = math.min(sb, st + (now - sl) * sr / US) end
      t = math.min(st, b)
      tt = math.max(sl, now) -- time went back (failover): refill nothing twice
      rebase[i] = (s3 ~= rs) or (sb ~= b)
    end
  end
  tokens[i], times[i] = t, tt
  if refused == 0 and t < 1 - EPS then refused = i end
end

-- Quota: used count in the current period.
local qkey, used, pstart, pend, sstart, qexpiry
local nkeys = n
if qlimit >= 0 then
  nkeys = nkeys + 1
  qkey = KEYS[nkeys]
  pstart, pend = period(math.floor(now / US / 86400), ARGV[5], tonumber(ARGV[6]))
  local s = redis.call('HMGET', qkey, 's', 'n', 'e')
  qexpiry = s[3]
  used = 0
  -- The stored start is the latest period start seen: the count goes on
  -- unless the current period starts after it (so a clock that went back
  -- across a period edge, or a period change, never resets it early).
  sstart = pstart
  if s[1] and tonumber(s[1]) >= pstart then used, sstart = tonumber(s[2]), tonumber(s[1]) end
  if refused == 0 and used + 1 > qlimit then refused = n + 1 end
end

-- one SET with its TTL (at least SLACK_US ahead, so PX is always > 0)
local function write_bucket(i, t)
  local state = fmt(t) .. ' ' .. fmt(times[i]) .. ' ' .. ARGV[6 + 2 * i] .. ' ' .. ARGV[7 + 2 * i]
  redis.call('SET', KEYS[i], state, 'PX', fmt(math.ceil((times[i] + ttl_us(t, rates[i], bursts[i]) - now) / 1000)))
end

local allowed = (refused == 0)
if allowed then
  for i = 1, n do
    tokens[i] = math.max(0, tokens[i] - 1)
    write_bucket(i, tokens[i])
  end
  if qkey then
    used = used + 1
    redis.call('HSET', qkey, 's', fmt(sstart), 'n', fmt(used), 'e', fmt(pend))
    -- the TTL ends at a fixed moment (period end + margin); set it only
    -- when the state does not say it was set for this period end
    if qexpiry ~= fmt(pend) then
      redis.call('PEXPIRE', qkey, fmt(math.ceil(((pend + QUOTA_MARGIN_S) * US - now) / 1000)))
    end
  end
  if ARGV[7] == '1' then
    local ukey = KEYS[nkeys + 1]
    local days = math.floor(now / US / 86400)
    -- only this script writes the usage hash, so its TTL is renewed with
    -- the first count of each UTC day, when old days are pruned too
    if redis.call('HINCRBY', ukey, date_string(days), 1) == 1 then
      local cutoff = date_string(days - USAGE_KEEP_DAYS)
      for _, f in ipairs(redis.call('HKEYS', ukey)) do
        if f < cutoff then redis.call('HDEL', ukey, f) end
      end
      redis.call('EXPIRE', ukey, USAGE_TTL_S)
    end
  end
else
  for i = 1, n do
    if rebase[i] then write_bucket(i, tokens[i]) end
  end
end

local retry = 0
if refused >= 1 and refused <= n then
  local r = rates[refused]
  -- refill starts at times[i], later than now only if time went back
  if r > 0 then retry = math.max(1, times[refused] - now + ceil_us((1 - tokens[refused]) * US / r)) else retry = -1 end
elseif refused == n + 1 then
  retry = pend * US - now
end

local premain, pfull = -1, -1
if plan >= 1 then
  premain = math.floor(tokens[plan] + EPS)
  pfull = until_full(tokens[plan], rates[plan], bursts[plan])
  if pfull > 0 then pfull = pfull + times[plan] - now end
end
local qremain, qs, qe = -1, 0, 0
if qkey then
  qremain, qs, qe = math.max(0, qlimit - used), pstart, pend
end
return {allowed and 1 or 0, refused, now, retry, premain, pfull, qremain, qs, qe}
