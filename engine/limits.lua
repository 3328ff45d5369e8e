--[[
tollgate limits: every script operation on limiter state, in one file that
reads on its own (no other file is prepended): atomic, all-or-nothing
decisions over token buckets and a calendar quota (docs/behaviour.md,
"Throttles and quota"), giving back tokens of shared buckets a request
took but did not use (Redis Cluster), and reading or setting a quota.
Run with EVALSHA; every KEYS entry of one run is in one Redis Cluster slot
(the Go side groups them: engine/batch.go, engine/cluster.go). The script
the engine loads is this file with rules.lua (rate-limit rules, more
operations) inserted before the dispatch at its end (engine/scripts.go).

ARGV[1] is the operation, ARGV[2] the clock: the time of the run in Unix
microseconds, or "" to read Redis TIME (production always sends ""; tests
inject a clock). All time is Redis time, never a node clock.

op "decide": a batch of decisions, decided in order, each exactly as if it
ran alone after the ones before it: the states are read once (one MGET),
kept in Lua tables while the decisions run, and each changed key is
written once at the end. One run costs TIME, MGET, one SET per changed
bucket or quota and one HINCRBY per usage hash, however many decisions
share those keys: a busy stage or account bucket is read and written once
per batch, not once per request. Every decision of a batch sees the same
now.
  KEYS  1..m  bucket and quota states (formats below); m+1.. daily usage hashes
        and the usage change set
  ARGV  3  D, the number of decisions
        4  m, the number of state keys
        5  the decisions, packed little-endian one after the other:
             '<BBHi4BBHH' nb buckets, plan (1-based index of the caller's
                         plan bucket among them, 0: none), quota key index
                         (0: none), quota limit (requests), period (0 DAY,
                         1 WEEK, 2 MONTH), offset (days), usage index u (0:
                         none; the hash is KEYS[m + u]), want w: the tokens
                         and units to take when admitted (1: the request
                         alone; more: a capacity lease, below)
             nb x '<Hdi4' bucket key index, rate (tokens/s, the float64
                         itself), burst (tokens). Key index 0 is a bucket
                         decided in another slot (a shared bucket on Redis
                         Cluster, taken first): burst 1 if it admitted, 0 if
                         it refused; rate its retry-after in µs (-1: never).
                         It keeps its place in the check order and is
                         neither read nor charged here.
        6  the index in KEYS of the usage change set of this slot (a sorted
           set, engine/usagesource.go), or "" for none: every usage hash a run
           counts into is added to it with the UTC day (days since
           1970-01-01) as score, ZADD LT: a member keeps the earliest day
           counted since the flush worker last took it, and a member the
           worker holds (a hold's score is far above any day) is marked
           changed again
        7  "1" to await the restore: while the change set lacks the member
           "~r" (the admin's restore mark, engine/restore.go), every
           decision that counts usage (a keyed request) is refused with
           refusing index -1 and retry-after 1 s, charging nothing
  Reply: one string, per decision '<i8' x 10:
    1 allowed (1/0)     2 refusing index (0 none, i bucket i, nb+1 quota,
                          -1 not restored: ARGV[7])
    3 now (µs)          4 retry-after (µs; 0 when allowed; -1 never: rate 0)
    5 plan bucket whole tokens left (-1: no plan bucket)
    6 plan bucket µs until full (-1: never, rate 0 and not full)
    7 quota remaining after this request (-1: no quota)
    8 quota period start, 9 quota period end (Unix seconds)
    10 granted k: the tokens and units taken (0 when refused)
  A capacity lease (docs/leases.md): a decision that wants w > 1 and is
  admitted takes k = min(w, floor(tokens / LEASE_SHARE) of every bucket,
  floor((limit - used) / LEASE_SHARE) of the quota), at least 1, from every
  bucket and the quota at once: the request is one of them, the node admits
  up to k - 1 more against the rest without a round trip and gives back
  what it did not spend (op "unlease"). So a lease never takes more than
  1/LEASE_SHARE of what is left, and shrinks to 1 (a plain decision) as a
  bucket or the quota nears empty. Usage counts the request only: the
  node counts the requests it admits on the lease when it ends it.

op "unlease": end capacity leases: give back what a node took with "decide"
(want > 1) but did not spend, and count the usage of what it spent.
  KEYS  1..m  bucket and quota states; m+1.. daily usage hashes and the
        usage change set
  ARGV  3  m   5  the index in KEYS of the usage change set, or "" (as
        decide's 6)   4  the leases, packed one after the other:
             '<BHHi4' nb buckets, quota key index (0: none), usage index
                      (0: none), spent s (requests the node admitted on the
                      lease: usage grows by s)
             if a quota: '<i4d' unspent units g, the quota period start
                      (Unix s) of the take: the count drops by g, unless the
                      state is of another period by now
             nb x '<Hi4i4d' bucket key index, taken n, unspent g, time of
                      the take t0 (µs)
  A bucket gets back y = min(g, n - r * (now - t0)) tokens (nothing when
  that is not positive), r the rate it is stored with, under the limits it
  is stored with (as op "refund"). The subtraction is the refill the bucket
  had while the lease held its tokens: a bucket that refilled to full
  meanwhile would have lost that refill at its burst had the tokens
  stayed, so giving all of g back could exceed the burst + rate x (T + L)
  bound (docs/leases.md proves the rule). Unspent quota units come back
  whole (a quota does not refill).
  Reply: the number of states written.

op "refund": give back tokens a request took from buckets of this slot
but did not use, because a limit in another slot refused it.
  KEYS  1..n  bucket states
  ARGV  3  the refunds, packed: n' x '<Hi4' key index, tokens to give back
  Each bucket gets tokens = min(b, tokens now + given back) under the
  limits r and b it is stored with, whatever limits the take ran under: a
  decision under other limits may have rebased it since, and giving back
  under the take's older burst would count a bucket of a raised burst as
  full (and reset it to the new burst: an over-admission). A bucket full
  again at its stored burst is deleted (an absent state is a full bucket,
  so the give-back leaves it as if never taken), and an absent or expired
  state stays absent.
  Reply: the number of buckets written.

op "settle": settle one request decided with a quota but no usage count
(a plan tagged tollgate:quota-counts=non-5xx, docs/usage.md) once its
response is known: count it in usage, or give its quota unit back.
  KEYS  1  the quota state   2  the daily usage hash   3  the usage change set
  ARGV  3  the quota period start (Unix s) of the decision
        4  "1": count the request in today's usage (marked in the change
           set, as "decide" does); "0": give its quota unit back (the count
           drops by 1, the change sequence number grows by 1, the usage
           hash is marked in the change set), unless the state is of
           another period by now
        5  the index in KEYS of the usage change set ("3"), or ""
  Reply: 1 when it wrote, else 0.

op "quota": read or set the remaining quota of one key in the current
period (UpdateUsage, docs/behaviour.md "Usage").
  KEYS  1  the quota state, as "decide" writes it
  ARGV  3  quota limit (requests)   4  period "DAY", "WEEK" or "MONTH"
        5  offset (days)            6  "" to only read; else the new
           remaining, already clamped to 0..limit: the state becomes
           (current period start, limit - remaining, period end)
  Reply: {remaining, period start (s), period end (s), now (µs)}, remaining
  being max(0, limit - n) (n = 0 when the state is of an older period).

State formats. States are binary strings packed with Redis's struct
library: packing a double is exact and costs a fraction of
string.format('%.17g') or tostring, and one MGET reads any number of them.
  bucket: "\1" then '<dddd' = tokens t (float), time l of t (Unix µs), rate
          r (tokens/s) and burst b the state was written under
  quota:  "\2" then '<dddd' = s the period start (Unix s, the latest one
          seen), n requests admitted since, e the period end (Unix s) the
          key's TTL was set for, q the change sequence number: each
          admission and each set (op "quota") adds 1 (the usage ledger
          keeps the state with the highest q, docs/usage.md). The older
          '<ddd' form (no q) reads as q = 0.
Anything else in such a key (another type, another length) counts as
absent and is replaced by the next write (SET replaces any type), so a
stray key never fails a decision.

Algorithm. A token bucket per bucket key: capacity burst, refill rate
tokens/s, starting full, one token per request (the classic token bucket,
e.g. RFC 2697's committed bucket; go-redis/redis_rate's GCRA is equivalent
but keeps no explicit token count). Tokens at time now under the stored
limits: min(b, t + (now-l)*r/1e6); time is integer microseconds, so the
only rounding is in that product, and a token counts as present when
tokens >= 1 - EPS (EPS = 1e-9 token, i.e. at most 1 µs early at rate
0.001/s): 10/13 per second at t = 1.3 s is admitted although
1.3 * 0.7692307692307693 may be 0.99999999999999989.
Limit changes: when the request's rate/burst differ from the stored ones,
tokens = min(tokens under the stored limits up to now, new burst) and the
state is rebased to the new limits at now (written even on a refusal; that
charges nothing). State whose expiry moment has passed (full again + 1 s,
or 400 days at rate 0) counts as absent, so the script behaves exactly as
if Redis had expired the key, whatever clock the caller uses. Time that
goes back (a failover to a server whose clock is behind) refills nothing
twice.

Quota: UTC calendar periods of the current time, computed here (no key
name holds a time): DAY from 00:00; WEEK from Sunday + offset days; MONTH
from the 1st + offset days (offset <= 27, so the day exists in every
month), the rule of plans.Quota.Bounds. A period that starts after the
stored start resets the count; a lower limit gives remaining
max(0, limit - n). Civil dates use Howard Hinnant's days_from_civil /
civil_from_days (http://howardhinnant.github.io/date_algorithms.html).

Admission needs a token in every bucket and n + 1 <= limit; then every
bucket loses one token, n grows by one and the usage hash field for today
("YYYY-MM-DD", UTC) grows by one. Every write sets its TTL in the same run:
bucket until full again + 1 s (400 days at rate 0; SET PX ms); quota until
its period end + 1 hour (SET PX ms, or KEEPTTL when the state says the TTL
was already set for this period end); usage 100 days (EXPIRE s, with the
first count of each UTC day, when fields older than 100 days are deleted).
]]

local US = 1000000
local EPS = 1e-9
local SLACK_US = 1000000
local RATE0_TTL_US = 400 * 86400 * US
local QUOTA_MARGIN_S = 3600
local USAGE_TTL_S = 100 * 86400
local USAGE_KEEP_DAYS = 100
local PERIODS = {[0] = 'DAY', [1] = 'WEEK', [2] = 'MONTH'}
local LEASE_SHARE = 4
local BUCKET_MARK, QUOTA_MARK = 1, 2
local mmin, mmax, mfloor, mceil = math.min, math.max, math.floor, math.ceil
local spack, sunpack, sbyte = struct.pack, struct.unpack, string.byte

local now
if ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * US + tonumber(t[2])
end
local days = mfloor(now / US / 86400)

-- Calendar ---------------------------------------------------------------

-- Howard Hinnant's civil calendar algorithms (proleptic Gregorian, days
-- since 1970-01-01); math.floor makes the divisions floor divisions.
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = mfloor(y / 400)
  local yoe = y - era * 400
  local mp = (m > 2) and (m - 3) or (m + 9)
  local doy = mfloor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + mfloor(yoe / 4) - mfloor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = mfloor(z / 146097)
  local doe = z - era * 146097
  local yoe = mfloor((doe - mfloor(doe / 1460) + mfloor(doe / 36524) - mfloor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + mfloor(yoe / 4) - mfloor(yoe / 100))
  local mp = mfloor((5 * doy + 2) / 153)
  local d = doy - mfloor((153 * mp + 2) / 5) + 1
  local m = (mp < 10) and (mp + 3) or (mp - 9)
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

-- "YYYY-MM-DD" of day `day` (days since 1970-01-01)
local function date_string(day)
  local y, m, d = civil_from_days(day)
  return string.format('%04d-%02d-%02d', y, m, d)
end

-- [start, end) in Unix seconds of the quota period containing day `day`
local function period(day, kind, offset)
  if kind == 'WEEK' then
    local back = ((day + 4) % 7 - offset) % 7 -- 1970-01-01 was a Thursday (4)
    local first = day - back
    return first * 86400, (first + 7) * 86400
  elseif kind == 'MONTH' then
    local y, m = civil_from_days(day)
    local first = days_from_civil(y, m, 1 + offset)
    if first > day then
      if m == 1 then y, m = y - 1, 12 else m = m - 1 end
      first = days_from_civil(y, m, 1 + offset)
    end
    if m == 12 then y, m = y + 1, 1 else m = m + 1 end
    return first * 86400, days_from_civil(y, m, 1 + offset) * 86400
  end
  return day * 86400, (day + 1) * 86400
end

-- State formats ------------------------------------------------------------

-- bucket_state(v) -> {tokens, time, rate, burst}, or false
local function bucket_state(v)
  if v and #v == 33 and sbyte(v, 1) == BUCKET_MARK then
    local tokens, at, rate, burst = sunpack('<dddd', v, 2)
    return {tokens, at, rate, burst}
  end
  return false
end

local function bucket_value(s)
  return spack('<Bdddd', BUCKET_MARK, s[1], s[2], s[3], s[4])
end

-- quota_state(v) -> {period_start, used, ttl_period_end}, seq; or false, 0
local function quota_state(v)
  if v and sbyte(v, 1) == QUOTA_MARK then
    if #v == 33 then
      local period_start, used, period_end, seq = sunpack('<dddd', v, 2)
      return {period_start, used, period_end}, seq
    elseif #v == 25 then
      local period_start, used, period_end = sunpack('<ddd', v, 2)
      return {period_start, used, period_end}, 0
    end
  end
  return false, 0
end

-- the stored form of quota state s with change sequence number seq
local function quota_value(s, seq)
  return spack('<Bdddd', QUOTA_MARK, s[1], s[2], s[3], seq)
end

-- Token buckets ------------------------------------------------------------

-- ceil with a tolerance of 1 ns for float noise in a µs amount
local function ceil_us(x) return mceil(x - 1e-3) end

-- µs from a state (tokens, rate, burst) until the bucket is full; -1 when
-- it never will be (rate 0 and not full)
local function until_full(tokens, rate, burst)
  if tokens >= burst then return 0 end
  if rate <= 0 then return -1 end
  return ceil_us((burst - tokens) * US / rate)
end

-- µs from the state's time until its key may expire
local function ttl_us(tokens, rate, burst)
  local full = until_full(tokens, rate, burst)
  if full < 0 then return RATE0_TTL_US end
  return full + SLACK_US
end

-- tokens_now(s, rate, burst) -> tokens at now under the new limits, the
-- time they are counted from, and whether the state must be rebased to the
-- new limits. s is a bucket state or false (a full bucket).
local function tokens_now(s, rate, burst)
  if not s then return burst, now, false end
  local tokens, at, srate, sburst = s[1], s[2], s[3], s[4]
  if now >= at + ttl_us(tokens, srate, sburst) then return burst, now, false end
  if now > at then tokens = mmin(sburst, tokens + (now - at) * srate / US) end
  -- time went back (failover): refill nothing twice
  return mmin(tokens, burst), mmax(at, now), (srate ~= rate) or (sburst ~= burst)
end

-- give_back(s, back) -> bucket state s (present, not expired) with back
-- tokens added at now, under the limits s is stored with (never the
-- limits of the take: see op "refund"); false when that fills it
local function give_back(s, back)
  local rate, burst = s[3], s[4]
  local tokens, at = tokens_now(s, rate, burst)
  tokens = mmin(burst, tokens + back)
  if tokens >= burst then return false end
  return {tokens, at, rate, burst}
end

-- SET of a bucket state with its TTL (at least SLACK_US ahead, so PX > 0)
local function write_bucket(key, s)
  redis.call('SET', key, bucket_value(s), 'PX', mceil((s[2] + ttl_us(s[1], s[3], s[4]) - now) / 1000))
end

-- every state of KEYS[1..m] in one read (MGET answers false for an absent
-- key and for a key of another type), in chunks within Lua's unpack limit
local function read_states(m)
  local vals = {}
  for i = 1, m, 1000 do
    local part = redis.call('MGET', unpack(KEYS, i, mmin(m, i + 999)))
    for j = 1, #part do vals[i + j - 1] = part[j] end
  end
  return vals
end

-- count_usage adds count requests to today's field of the usage hash
-- ukey, and marks it in the usage change set KEYS[changes] (nil: none).
-- Only this script writes usage hashes, so the TTL is renewed with the
-- first count of each UTC day, when old days are pruned too.
local function count_usage(ukey, count, changes)
  if changes then redis.call('ZADD', KEYS[changes], 'LT', days, ukey) end
  local today = date_string(days)
  -- pcall: a key of another type (not written by tollgate) loses its
  -- count rather than failing every decision of the batch
  if redis.pcall('HINCRBY', ukey, today, count) == count then
    local cutoff = date_string(days - USAGE_KEEP_DAYS)
    for _, f in ipairs(redis.call('HKEYS', ukey)) do
      if f < cutoff then redis.call('HDEL', ukey, f) end
    end
    redis.call('EXPIRE', ukey, USAGE_TTL_S)
  end
end

-- Operations ---------------------------------------------------------------

-- changes: the index in KEYS of the usage change set, nil for none;
-- await: refuse keyed decisions while the set lacks the restore mark
local function decide(changes, await)
  local ndec, m, spec = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
  local vals = read_states(m)

  -- States by key index, decoded on first use: buckets {tokens, time, rate,
  -- burst}, quotas {period_start, used, period_end}, false when absent.
  -- order lists the changed ones, to write once.
  local states, dirty, order, ndirty = {}, {}, {}, 0
  local ttl_end = {} -- quota key index -> the period end its TTL was set for
  local seqs = {} -- quota key index -> its change sequence number, +1 per admission
  local function bucket_at(ki)
    local s = states[ki]
    if s == nil then
      s = bucket_state(vals[ki])
      states[ki] = s
    end
    return s
  end
  local function quota_at(ki)
    local s = states[ki]
    if s == nil then
      s, seqs[ki] = quota_state(vals[ki])
      if s then ttl_end[ki] = s[3] end
      states[ki] = s
    end
    return s
  end
  local function mark(ki)
    if not dirty[ki] then
      ndirty = ndirty + 1
      dirty[ki] = true
      order[ndirty] = ki
    end
  end
  -- put_bucket stores a bucket state, in place when one is already there
  local function put_bucket(ki, tokens, at, rate, burst)
    mark(ki)
    local s = states[ki]
    if s then
      s[1], s[2], s[3], s[4] = tokens, at, rate, burst
    else
      states[ki] = {tokens, at, rate, burst}
    end
  end

  -- quota period bounds by (period, offset): every decision has the same now
  local bounds = {}
  local function quota_bounds(code, offset)
    local k = code * 256 + offset
    local b = bounds[k]
    if not b then
      local first, last = period(days, PERIODS[code] or 'DAY', offset)
      b = {first, last}
      bounds[k] = b
    end
    return b[1], b[2]
  end

  local restored = not (changes and await) or redis.call('ZSCORE', KEYS[changes], '~r')

  local usage = {} -- usage key index -> admitted requests in this batch
  local usage_order, nusage = {}, 0
  local out = {}
  local kis, rates, bursts, tokens, times, rebase = {}, {}, {}, {}, {}, {}
  local pos = 1
  for d = 1, ndec do
    local nb, plan, qki, qlimit, qcode, qoff, uki, want
    nb, plan, qki, qlimit, qcode, qoff, uki, want, pos = sunpack('<BBHi4BBHH', spec, pos)

    -- Buckets: tokens now, and whether the state must be rebased. A bucket
    -- decided in another slot (key index 0) has a token when it admitted.
    local refused = 0
    for i = 1, nb do
      local ki, rate, burst
      ki, rate, burst, pos = sunpack('<Hdi4', spec, pos)
      kis[i], rates[i], bursts[i] = ki, rate, burst
      if ki == 0 then
        tokens[i], times[i], rebase[i] = burst, now, false
      else
        tokens[i], times[i], rebase[i] = tokens_now(bucket_at(ki), rate, burst)
      end
      if refused == 0 and tokens[i] < 1 - EPS then refused = i end
    end

    -- a keyed decision waits for the restore (ARGV[7]): refused, charging nothing
    if (uki > 0 or qki > 0) and not restored then refused = -1 end

    -- Quota: used count in the current period. The stored start is the
    -- latest period start seen: the count goes on unless the current period
    -- starts after it (so a clock that went back across a period edge, or a
    -- period change, never resets it early).
    local used, kept_start, period_start, period_end = 0, 0, 0, 0
    if qki > 0 then
      period_start, period_end = quota_bounds(qcode, qoff)
      local q = quota_at(qki)
      kept_start = period_start
      if q and q[1] >= period_start then used, kept_start = q[2], q[1] end
      if refused == 0 and used + 1 > qlimit then refused = nb + 1 end
    end

    local allowed = (refused == 0)
    local granted = 0
    if allowed then
      -- a lease takes at most 1/LEASE_SHARE of what every level has left
      granted = want
      for i = 1, nb do
        if kis[i] > 0 and granted > 1 then granted = mmin(granted, mfloor((tokens[i] + EPS) / LEASE_SHARE)) end
      end
      if qki > 0 and granted > 1 then granted = mmin(granted, mfloor((qlimit - used) / LEASE_SHARE)) end
      if granted < 1 then granted = 1 end
      for i = 1, nb do
        if kis[i] > 0 then
          tokens[i] = mmax(0, tokens[i] - granted)
          put_bucket(kis[i], tokens[i], times[i], rates[i], bursts[i])
        end
      end
      if qki > 0 then
        used = used + granted
        seqs[qki] = seqs[qki] + 1
        mark(qki)
        local q = states[qki]
        if q then
          q[1], q[2], q[3] = kept_start, used, period_end
        else
          states[qki] = {kept_start, used, period_end}
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
      local rate = rates[refused]
      if kis[refused] == 0 then
        retry = rate -- decided in another slot: its own retry-after
      elseif rate > 0 then
        -- refill starts at times[i], later than now only if time went back
        retry = mmax(1, times[refused] - now + ceil_us((1 - tokens[refused]) * US / rate))
      else
        retry = -1
      end
    elseif refused == nb + 1 then
      retry = period_end * US - now
    elseif refused == -1 then
      retry = US
    end

    local plan_left, plan_full = -1, -1
    if plan >= 1 then
      plan_left = mfloor(tokens[plan] + EPS)
      plan_full = until_full(tokens[plan], rates[plan], bursts[plan])
      if plan_full > 0 then plan_full = plan_full + times[plan] - now end
    end
    local quota_left, qs, qe = -1, 0, 0
    if qki > 0 then
      quota_left, qs, qe = mmax(0, qlimit - used), period_start, period_end
    end
    out[d] = spack('<i8i8i8i8i8i8i8i8i8i8', allowed and 1 or 0, refused, now, retry, plan_left, plan_full, quota_left, qs, qe, granted)
  end

  -- Writes, one per changed key, each with its TTL.
  for j = 1, ndirty do
    local ki = order[j]
    local s = states[ki]
    if #s == 4 then
      write_bucket(KEYS[ki], s)
    elseif ttl_end[ki] == s[3] then
      -- the TTL ends at a fixed moment (period end + margin), already set
      redis.call('SET', KEYS[ki], quota_value(s, seqs[ki]), 'KEEPTTL')
    else
      redis.call('SET', KEYS[ki], quota_value(s, seqs[ki]), 'PX', mceil(((s[3] + QUOTA_MARGIN_S) * US - now) / 1000))
    end
  end

  for j = 1, nusage do
    local uki = usage_order[j]
    count_usage(KEYS[m + uki], usage[uki], changes)
  end

  return table.concat(out)
end

-- give_back_at gives back amount(s) tokens (nothing unless positive) to
-- the bucket of KEYS[ki], whose current value is vals[ki], when its state
-- is present and not expired (an absent state stays absent); vals[ki]
-- follows. It reports whether it wrote.
local function give_back_at(vals, ki, amount)
  local s = bucket_state(vals[ki])
  if not s or now >= s[2] + ttl_us(s[1], s[3], s[4]) then return false end
  local back = amount(s)
  if back <= 0 then return false end
  s = give_back(s, back)
  if s then
    vals[ki] = bucket_value(s)
    write_bucket(KEYS[ki], s)
  else
    -- full again: as if never taken (an absent state is a full bucket)
    vals[ki] = false
    redis.call('DEL', KEYS[ki])
  end
  return true
end

local function refund()
  local spec = ARGV[3]
  local vals = read_states(#KEYS)
  local written, pos = 0, 1
  while pos <= #spec do
    local ki, back
    ki, back, pos = sunpack('<Hi4', spec, pos)
    if give_back_at(vals, ki, function() return back end) then written = written + 1 end
  end
  return written
end

-- changes: the index in KEYS of the usage change set, nil for none
local function unlease(changes)
  local m, spec = tonumber(ARGV[3]), ARGV[4]
  local vals = read_states(m)
  local written, pos = 0, 1
  while pos <= #spec do
    local nb, qki, uki, spent
    nb, qki, uki, spent, pos = sunpack('<BHHi4', spec, pos)
    if qki > 0 then
      local g, start
      g, start, pos = sunpack('<i4d', spec, pos)
      local q, seq = quota_state(vals[qki])
      if q and g > 0 and q[1] == start then
        q[2] = mmax(0, q[2] - g)
        vals[qki] = quota_value(q, seq + 1)
        redis.call('SET', KEYS[qki], vals[qki], 'KEEPTTL')
        written = written + 1
      end
    end
    for _ = 1, nb do
      local ki, n, g, t0
      ki, n, g, t0, pos = sunpack('<Hi4i4d', spec, pos)
      -- less the refill of the hold, at the rate the bucket is stored with
      local held = function(s) return mmin(g, n - s[3] * mmax(0, now - t0) / US) end
      if give_back_at(vals, ki, held) then written = written + 1 end
    end
    if uki > 0 and spent > 0 then count_usage(KEYS[m + uki], spent, changes) end
  end
  return written
end

-- changes: the index in KEYS of the usage change set, nil for none
local function settle(changes)
  if ARGV[4] == '1' then
    count_usage(KEYS[2], 1, changes)
    return 1
  end
  local q, seq = quota_state(redis.call('MGET', KEYS[1])[1])
  if q and q[1] == tonumber(ARGV[3]) and q[2] > 0 then
    q[2] = q[2] - 1
    redis.call('SET', KEYS[1], quota_value(q, seq + 1), 'KEEPTTL')
    -- marked, so the flush takes the lower count to the ledger
    if changes then redis.call('ZADD', KEYS[changes], 'LT', days, KEYS[2]) end
    return 1
  end
  return 0
end

local function quota()
  local limit = tonumber(ARGV[3])
  local period_start, period_end = period(days, ARGV[4], tonumber(ARGV[5]))
  -- as decide: the stored start is the latest period start seen
  local used, kept_start = 0, period_start
  local q, seq = quota_state(redis.call('MGET', KEYS[1])[1])
  if q and q[1] >= period_start then used, kept_start = q[2], q[1] end
  if ARGV[6] ~= '' then
    used = limit - tonumber(ARGV[6])
    redis.call('SET', KEYS[1], quota_value({kept_start, used, period_end}, seq + 1), 'PX', mceil(((period_end + QUOTA_MARGIN_S) * US - now) / 1000))
  end
  return {mmax(0, limit - used), period_start, period_end, now}
end

local ops = {decide = function() return decide(tonumber(ARGV[6] or ''), ARGV[7] == '1') end, refund = refund,
  unlease = function() return unlease(tonumber(ARGV[5] or '')) end, quota = quota,
  settle = function() return settle(tonumber(ARGV[5] or '')) end}
local run = ops[ARGV[1]]
if not run then return redis.error_reply('ERR tollgate limits.lua: unknown operation ' .. tostring(ARGV[1])) end
return run()
