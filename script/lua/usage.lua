--[[
usage: quota states, usage counts, the usage change sets and the restore
gate; ops "settle", "quota" and "hold". Takes wire, and US, SLACK_US, mmin,
mmax, mfloor, mceil, now, days, day_of, date_string, period, period_in
(clock.lua).

A quota state (wire.quota_state) holds the latest period start seen and the
units used since; a period that starts after the stored start resets the
count, and a clock that goes back across a period edge never resets it
early. Its TTL is the period end + 1 hour.

Usage is counted per (key, plan) in a hash of UTC days ("YYYY-MM-DD" →
admitted requests; "YYYY-MM-DD#x" → their cost units beyond one per
request, written only when not 0, so a day's units are the two summed),
kept 100 days. Every hash a run counts into is marked
in its slot's usage change set (a sorted set: one on a single primary, one
per Redis Cluster slot), scored by the earliest day counted since the
ledger's flush worker last took it (ZADD LT); a member the worker holds
has a score far above any day (its hold's end), so counting again marks it
changed again. The set's member "~r" (scored +inf) is the admin's restore
mark: it vanishes with the slot's data, and while it is missing keyed
decisions wait (restored).

Defines: QUOTA_MARGIN_S, quota_used(q, start), write_quota,
count_usage(key, count, extra, day, marks),
mark_changed(changes, marks), restored(changes).
]]

local QUOTA_MARGIN_S = 3600
local USAGE_TTL_S = 100 * 86400
local USAGE_KEEP_DAYS = 100

-- units used in the period that starts at start, and the start to keep:
-- the stored state's when it is of that period or a later one
local function quota_used(q, start)
  if q and q.period_start_s >= start then return q.used, q.period_start_s end
  return 0, start
end

-- SET of a quota state: KEEPTTL when its TTL was set for this period end
-- (ttl_end), else until the period end + QUOTA_MARGIN_S
local function write_quota(key, q, ttl_end)
  if ttl_end == q.period_end_s then
    redis.call('SET', key, wire.pack_quota_state(q), 'KEEPTTL')
  else
    redis.call('SET', key, wire.pack_quota_state(q), 'PX',
      mceil(mmax(((q.period_end_s + QUOTA_MARGIN_S) * US - now), q.leased_until_us + SLACK_US - now) / 1000))
  end
end

-- count_usage adds count requests, and extra cost units beyond one per
-- request, to day's fields of the usage hash key, and appends day and key
-- to marks (a list; mark_changed marks them in the change set). Only this
-- library writes usage hashes, so the TTL is renewed with the first count
-- of each day, when days older than USAGE_KEEP_DAYS are deleted.
local function count_usage(key, count, extra, day, marks)
  marks[#marks + 1] = day
  marks[#marks + 1] = key
  local field = date_string(day)
  if extra ~= 0 then redis.pcall('HINCRBY', key, field .. wire.USAGE_EXTRA, extra) end
  -- pcall: a key of another type (not tollgate's) loses its count rather
  -- than failing every decision of the run
  if redis.pcall('HINCRBY', key, field, count) == count then
    local cutoff = date_string(days - USAGE_KEEP_DAYS)
    for _, f in ipairs(redis.call('HKEYS', key)) do
      if f < cutoff then redis.call('HDEL', key, f) end
    end
    redis.call('EXPIRE', key, USAGE_TTL_S)
  end
end

-- mark_changed marks the usage hashes of marks (day, key, ... as
-- count_usage appends them) in the change set changes (a key name, or
-- nil: none) with one ZADD LT per run rather than one per hash (in chunks
-- within Lua's unpack limit)
local function mark_changed(changes, marks)
  if not changes then return end
  for i = 1, #marks, 1000 do
    redis.call('ZADD', changes, 'LT', unpack(marks, i, mmin(#marks, i + 999)))
  end
end

-- whether the slot of the change set changes holds its restore mark
local function restored(changes)
  return redis.call('ZSCORE', changes, wire.RESTORE_MARK) ~= false
end

--[[
op "settle": Redis Cluster's give-back of a customer quota's units, taken
in phase 1 for a request its key's limits refused (a request's settle once
its response is known is a charge of op "decide"). The units change only
while the state is of the period they were taken in, never below 0.
  KEYS  1 the customer quota state
  ARGV  3 wire.settle_args
  Reply: 1 when it wrote, else 0.
]]
local function settle()
  local a = {}
  wire.read_settle_args(ARGV[3], 1, a)
  local q = wire.quota_state(redis.call('GET', KEYS[1]))
  if not q or q.period_start_s ~= a.period_start_s or a.charge == 0 then return 0 end
  local used = mmax(0, q.used + a.charge)
  if used == q.used then return 0 end
  q.used, q.seq = used, q.seq + 1
  redis.call('SET', KEYS[1], wire.pack_quota_state(q), 'KEEPTTL')
  return 1
end

--[[
op "quota": read or set the remaining units of one key's quota in the
current period (UpdateUsage, GetUsage, the partner usage endpoint), and
read today's usage count.
  KEYS  1 the quota state  2 the usage hash (when wire.quota_args.today)
  ARGV  3 wire.quota_args, then its wire.period_bounds when its period is
          wire.PERIOD_TABLE: a set makes the state (current period start,
          limit - remaining), its change sequence number one higher
  Reply: wire.quota_reply; period_end_s 0 when the table does not hold
  now (nothing set).
]]
local function quota()
  local a = {}
  local pos = wire.read_quota_args(ARGV[3], 1, a)
  local start, stop
  if a.period == wire.PERIOD_TABLE then
    local pt = {}
    wire.read_period_bounds(ARGV[3], pos, pt)
    start, stop = period_in(pt, now)
    if not start then
      return wire.pack_quota_reply({remaining = 0, period_start_s = 0, period_end_s = 0, now_us = now, today = -1,
        today_units = -1, used = 0})
    end
  else
    start, stop = period(days, a.period, a.offset)
  end
  local q = wire.quota_state(redis.call('GET', KEYS[1]))
  local used, kept = quota_used(q, start)
  if a.set == 1 then
    used = a.limit - a.remaining
    local seq = q and q.seq or 0
    write_quota(KEYS[1], {period_start_s = kept, used = used, period_end_s = stop, seq = seq + 1, leases = 0, leased_until_us = 0}, -1)
  end
  local today, units = -1, -1
  if a.today == 1 then
    local f = redis.call('HMGET', KEYS[2], date_string(days), date_string(days) .. wire.USAGE_EXTRA)
    today = tonumber(f[1] or '0') or 0
    units = mmax(0, today + (tonumber(f[2] or '0') or 0))
  end
  return wire.pack_quota_reply({remaining = mmax(0, a.limit - used), period_start_s = start, period_end_s = stop,
    now_us = now, today = today, today_units = units, used = used})
end

--[[
op "hold": the ledger's flush worker takes up to ARGV[3] members of a usage
change set that are ready (a day score, or a hold that ended: score <= now
in ms * 1000) and holds them for ARGV[4] ms: their score becomes the hold's
end in Unix ms * 1000, or one more than the set's last hold when that is
higher, so each hold has a score of its own (an Ack removes exactly the
members still scored with it), exact in a double, far above any day.
  KEYS  1 the change set  2 the score of its last hold
  Reply: {hold score, now (Unix ms), member, its score before, ...}, or {}
  when nothing is ready. Scores are decimal strings (exact).
]]
local function hold()
  local now_ms = mfloor(now / 1000)
  local function num(x) return string.format('%.0f', x) end
  local limit, hold_ms = tonumber(ARGV[3]), tonumber(ARGV[4])
  local ready = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', num(now_ms * 1000), 'WITHSCORES', 'LIMIT', 0, limit)
  if #ready == 0 then return {} end
  local score = (now_ms + hold_ms) * 1000
  local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  if last >= score then score = last + 1 end
  redis.call('SET', KEYS[2], num(score))
  local out = {num(score), num(now_ms)}
  for i = 1, #ready, 2 do
    redis.call('ZADD', KEYS[1], num(score), ready[i])
    out[#out + 1] = ready[i]
    out[#out + 1] = ready[i + 1]
  end
  return out
end
