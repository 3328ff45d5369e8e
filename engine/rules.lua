--[[
tollgate rules: the rate-limit rules of docs/rules.md. This file is not a
script of its own: engine/scripts.go inserts it into limits.lua just
before that file's dispatch (its last lines, from "local run ="), in one
documented step, so the names it uses and does not define are
limits.lua's: now, days, US, EPS, SLACK_US, QUOTA_MARGIN_S, PERIODS, mmin,
mmax, mfloor, mceil, spack, sunpack, sbyte, ceil_us, until_full, ttl_us,
tokens_now, bucket_state, bucket_value, write_bucket, period, quota_state,
quota_value, decide and ops. It adds five operations to ops.

A rule's state for one value of what it counts by is one key (named by
keyspace.RuleState; one hash tag, so one Redis Cluster slot):
  TOKEN_BUCKET (1)   a bucket state of limits.lua (tokens, time, rate, burst)
  SLIDING_WINDOW (2) "\3" then '<ddd' = start of the current fixed window
                     (Unix µs, a multiple of the window), the previous
                     window's count, the current window's count
  FIXED_WINDOW (3)   "\4" then '<dd' = window start (Unix µs), count
  CONCURRENCY (4)    a sorted set: one member "<node>:<seq>" per request in
                     flight, scored by the Unix µs its lease ends; members
                     past their score are gone (a dead node's requests)
  LEAKY_BUCKET (5)   "\5" then '<d' = tat, the Unix µs at which the queue
                     of admitted requests has drained (GCRA's theoretical
                     arrival time)
  QUOTA (6)          a quota state of limits.lua (period start, count,
                     period end, seq; seq always 0: no usage is read from
                     it): a usage plan's quota decided as a rule
                     (a plan in shadow mode, docs/rules.md)
A string of another shape counts as absent. Every write sets a TTL: a
bucket as limits.lua's, a window until it can no longer count (end of the
next window for SLIDING_WINDOW, of the window for FIXED_WINDOW) + 1 s, a
sorted set until its latest lease ends + 1 s, a leaky bucket until tat +
1 s.

The algorithms (now is the run's time, W a window in µs, T = 1/rate in
µs):
  TOKEN_BUCKET   as limits.lua's buckets: a token counts when tokens >=
                 1 - EPS; one is taken.
  SLIDING_WINDOW the sliding-window counter estimate (docs/rules.md):
                 with cur = floor(now/W)*W and f = (now - cur)/W, est = prev * (1 - f) + curr; admitted when
                 est + 1 <= limit, then curr grows by one. A window that
                 ended moves curr to prev; an older one counts 0.
  FIXED_WINDOW   count of the window [cur, cur + W); admitted when
                 count + 1 <= limit.
  CONCURRENCY    members left after removing those whose lease ended;
                 admitted when members + 1 <= limit, then the request's
                 member is added with score now + lease.
  LEAKY_BUCKET   the request's turn is start = max(now, tat), its delay
                 start - now; admitted when delay <= maxDelay and
                 delay <= burst * T (at most burst wait), then tat =
                 start + T; T is 1/rate rounded up to a whole µs. (As OpenResty's
                 limit-req: excess requests wait for their slot, up to a
                 burst, instead of being refused; docs/rules.md.)
  QUOTA          as limits.lua's quota: the count of the current UTC
                 calendar period (a later period resets it); admitted
                 when count + 1 <= limit.

A rule packed for a decision ("rule spec"): '<BBH' algorithm, flags (1:
shadow), key index, then
  1 '<di4' rate, burst          2, 3 '<i4i8' limit, W (µs)
  4 '<i4i8I4I4' limit, lease (µs), node, seq (the member)
  5 '<di4i8' rate, burst, maxDelay (µs)
  6 '<i4BB' limit, period (0 DAY, 1 WEEK, 2 MONTH), offset (days)
and its result, '<i8' x 5: admitted (1/0; a shadow rule: would it have),
retry (µs until it could admit; -1 never: rate or limit 0), remaining
(whole requests left after this one), reset (µs until remaining is whole
again: bucket full, window over, queue drained, period over; -1 none), aux
(LEAKY_BUCKET: the delay in µs; the windows: the start of the window the
request was counted in, for an undo; QUOTA: the start in Unix s of the
period it was counted in, for an undo; else 0).

A decision's rules are decided all or nothing: each is checked first; when
every rule that is not shadow admits, each rule that admits (shadow ones
included) is charged; otherwise none is. A shadow rule that would refuse
is reported, never charged, and refuses nothing.

op "rules": decide rules in their own slot (Redis Cluster: a request's
rules are taken first, like the shared buckets, and undone if anything
else refuses it; engine/cluster.go).
  KEYS  rule states      ARGV 3 D, the number of decisions
                              4 the decisions: '<I4B' (unused), nr, then
                                nr rule specs
  Reply: the results of every rule of every decision, in order.

op "decide_rules": one primary: the rules and limits.lua's op "decide" of
a batch in one run, atomic. Each decision's rules are taken first; then
the decision's placeholder in the decide spec (a bucket "decided in
another slot", packed by the caller) is set to the rules' outcome
(admitted, or refused with the first refusing rule's retry) and decide
runs the batch; the rules of every decision decide refused are undone.
(A request refused in the batch may thus hold a rule's unit while the
decisions after it in the same batch are decided: it can only refuse, never
admit, one of them.)
  KEYS  limits.lua's (m states, then u usage hashes), then rule states,
        then the usage change set when there is one
  ARGV  3, 4, 5 as op "decide" (5 holds the placeholders)
        6 u    7 the rules: per decision '<I4B' placeholder offset + 1 in
                 ARGV[5] (0: none), nr, then nr rule specs (key indexes
                 among the rule states)
        8 as op "decide"'s 6: the index of the usage change set, or ""
        9 as op "decide"'s 7: "1" to await the restore
  Reply: decide's reply, then the rule results of every decision.

op "unrules": undo rules a request was charged (it was refused by another
limit), and end requests in flight (CONCURRENCY: the response ended).
  KEYS  rule states      ARGV 3 entries: '<BBH' algorithm, 0, key index,
        then 1 nothing (a token back under the bucket's stored limits; a
        full bucket is deleted); 2, 3 '<i8i8' W, the window charged (aux);
        4 '<I4I4' node, seq; 5 '<d' rate (tat goes back by T); 6 '<i8'
        the period start charged (aux)
  Reply: the number of entries undone.

op "renew": extend the leases of requests in flight (CONCURRENCY).
  KEYS  sorted sets       ARGV 3 lease (µs)   4 entries '<HI4I4' key
        index, node, seq: the member's score becomes now + lease if the
        member is still there (ZADD XX)
  Reply: the number of members renewed.
]]

local RULE_TB, RULE_SW, RULE_FW, RULE_CC, RULE_LB, RULE_QT = 1, 2, 3, 4, 5, 6
local SW_MARK, FW_MARK, LB_MARK = 3, 4, 5
local RULE_RESULT = '<i8i8i8i8i8'
local CC_RETRY_US = US -- a refused CONCURRENCY request may retry after 1 s

-- Window states ----------------------------------------------------------

-- sliding(v, W) -> current window start, prev, curr at now
local function sliding(v, W)
  local cur = mfloor(now / W) * W
  if v and #v == 25 and sbyte(v, 1) == SW_MARK then
    local start, prev, curr = sunpack('<ddd', v, 2)
    if start == cur then return cur, prev, curr end
    if start == cur - W then return cur, curr, 0 end
  end
  return cur, 0, 0
end

local function write_sliding(key, cur, W, prev, curr)
  redis.call('SET', key, spack('<Bddd', SW_MARK, cur, prev, curr), 'PX', mceil((cur + 2 * W - now + SLACK_US) / 1000))
end

-- fixed(v, W) -> current window start, count at now
local function fixed(v, W)
  local cur = mfloor(now / W) * W
  if v and #v == 17 and sbyte(v, 1) == FW_MARK then
    local start, count = sunpack('<dd', v, 2)
    if start == cur then return cur, count end
  end
  return cur, 0
end

local function write_fixed(key, cur, W, count)
  redis.call('SET', key, spack('<Bdd', FW_MARK, cur, count), 'PX', mceil((cur + W - now + SLACK_US) / 1000))
end

-- leaky(v) -> tat (0 when absent)
local function leaky(v)
  if v and #v == 9 and sbyte(v, 1) == LB_MARK then
    return (sunpack('<d', v, 2))
  end
  return 0
end

local function write_leaky(key, tat)
  redis.call('SET', key, spack('<Bd', LB_MARK, tat), 'PX', mceil((tat - now + SLACK_US) / 1000))
end

-- µs until est + 1 <= limit for a sliding window (prev, curr at elapsed
-- µs into a window of W); -1 never (limit < 1)
local function sliding_retry(prev, curr, elapsed, W, limit)
  if limit < 1 then return -1 end
  if curr + 1 <= limit + EPS then
    -- room in this window once enough of prev has decayed (prev > 0 here)
    return mmax(1, ceil_us(W * (1 - (limit - 1 - curr) / prev) - elapsed))
  end
  -- this window is full: wait for the next, where its count decays
  return mmax(1, ceil_us(W - elapsed + mmax(0, W * (1 - (limit - 1) / curr))))
end

-- Checks -----------------------------------------------------------------

-- A check reads one rule's state at now and returns whether it admits,
-- its result fields {admitted, retry, remaining, reset, aux} (the state
-- before the request), and, when it admits, a commit function that
-- charges it and moves the result to the state after the charge. Reads go
-- through the run's cache (get, held), and commits record what they wrote
-- there (put), so later decisions of a run see earlier charges.

local function check_tb(key, get, rate, burst)
  local tokens, at = tokens_now(bucket_state(get(key)), rate, burst)
  local function report(res, t)
    local full = until_full(t, rate, burst)
    if full > 0 then full = full + at - now end
    res[3], res[4] = mfloor(t + EPS), full
  end
  local res = {1, 0, 0, 0, 0}
  report(res, tokens)
  if tokens < 1 - EPS then
    res[1], res[2] = 0, -1
    if rate > 0 then res[2] = mmax(1, at - now + ceil_us((1 - tokens) * US / rate)) end
    return false, res
  end
  return true, res, function(put)
    local s = {mmax(0, tokens - 1), at, rate, burst}
    put(key, bucket_value(s))
    write_bucket(key, s)
    report(res, s[1])
  end
end

local function check_sw(key, get, limit, W)
  local cur, prev, curr = sliding(get(key), W)
  local elapsed = now - cur
  local est = prev * (1 - elapsed / W) + curr
  local res = {1, 0, mmax(0, mfloor(limit - est + EPS)), cur + W - now, cur}
  if est + 1 > limit + EPS then
    res[1], res[2] = 0, sliding_retry(prev, curr, elapsed, W, limit)
    return false, res
  end
  return true, res, function(put)
    put(key, spack('<Bddd', SW_MARK, cur, prev, curr + 1))
    write_sliding(key, cur, W, prev, curr + 1)
    res[3] = mmax(0, mfloor(limit - est - 1 + EPS))
  end
end

local function check_fw(key, get, limit, W)
  local cur, count = fixed(get(key), W)
  local res = {1, 0, mmax(0, limit - count), cur + W - now, cur}
  if count + 1 > limit then
    res[1], res[2] = 0, -1
    if limit >= 1 then res[2] = res[4] end
    return false, res
  end
  return true, res, function(put)
    put(key, spack('<Bdd', FW_MARK, cur, count + 1))
    write_fixed(key, cur, W, count + 1)
    res[3] = limit - count - 1
  end
end

local function check_cc(key, held, limit, lease, member)
  local n = held(key)
  local res = {1, 0, mmax(0, limit - n), -1, 0}
  if n + 1 > limit then
    res[1], res[2] = 0, -1
    if limit >= 1 then res[2] = CC_RETRY_US end
    return false, res
  end
  return true, res, function(put)
    redis.call('ZADD', key, now + lease, member)
    redis.call('PEXPIRE', key, mceil((lease + SLACK_US) / 1000))
    put(key, n + 1, true)
    res[3] = limit - n - 1
  end
end

-- the interval between a leaky bucket's turns: 1/rate in whole µs,
-- rounded up (at most 1 µs slower than the rate), so that every time is a
-- whole µs and no rounding builds up in tat
local function turn_us(rate) return mmax(1, ceil_us(US / rate)) end

local function check_lb(key, get, rate, burst, max_delay)
  local T = turn_us(rate)
  local start = mmax(now, leaky(get(key)))
  local delay = start - now
  local longest = mmin(max_delay, burst * T) -- the longest wait admitted
  local function left(wait) -- requests admitted now if the next waits wait
    if wait > longest then return 0 end
    return mfloor((longest - wait) / T) + 1
  end
  local res = {1, 0, left(delay), delay, delay}
  if delay > longest then
    res[1], res[2] = 0, delay - longest
    return false, res
  end
  return true, res, function(put)
    put(key, spack('<Bd', LB_MARK, start + T))
    write_leaky(key, start + T)
    res[3], res[4] = left(delay + T), delay + T
  end
end

-- quota_at(v, code, offset) -> the kept period start, the count and the
-- current period end (Unix s) of quota state v at now, as op "decide"
-- counts a quota
local function quota_at(v, code, offset)
  local first, last = period(days, PERIODS[code] or 'DAY', offset)
  local q = quota_state(v)
  if q and q[1] >= first then return q[1], q[2], last end
  return first, 0, last
end

local function write_quota(key, start, count, last)
  redis.call('SET', key, quota_value({start, count, last}, 0), 'PX', mceil(((last + QUOTA_MARGIN_S) * US - now) / 1000))
end

local function check_qt(key, get, limit, code, offset)
  local start, count, last = quota_at(get(key), code, offset)
  local res = {1, 0, mmax(0, limit - count), last * US - now, start}
  if count + 1 > limit then
    res[1], res[2] = 0, last * US - now
    return false, res
  end
  return true, res, function(put)
    put(key, quota_value({start, count + 1, last}, 0))
    write_quota(key, start, count + 1, last)
    res[3] = limit - count - 1
  end
end

-- Decisions --------------------------------------------------------------

-- new_rule_run(base) -> a run over rule states KEYS[base + ki]: take(spec,
-- pos) decides one decision's rules from the decision's '<I4B' header at
-- pos and returns pos after them, whether they admit (every non-shadow
-- rule), the retry of the first refusing one, their results (strings) and
-- their undo entries (strings, for op "unrules"; only for rules charged).
local function new_rule_run(base)
  local cache, held_n = {}, {}
  local function get(key)
    local v = cache[key]
    if v == nil then
      v = redis.call('GET', key)
      cache[key] = v
    end
    return v
  end
  local function held(key)
    local n = held_n[key]
    if n == nil then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
      n = redis.call('ZCARD', key)
      held_n[key] = n
    end
    return n
  end
  -- put records a charged state: a string value, or (held) a count of
  -- requests in flight
  local function put(key, v, is_held)
    if is_held then held_n[key] = v else cache[key] = v end
  end

  local function check(spec, pos)
    local algo, flags, ki
    algo, flags, ki, pos = sunpack('<BBH', spec, pos)
    local key = KEYS[base + ki]
    local ok, res, commit, undo
    if algo == RULE_TB then
      local rate, burst
      rate, burst, pos = sunpack('<di4', spec, pos)
      ok, res, commit = check_tb(key, get, rate, burst)
      undo = spack('<BBH', algo, 0, ki)
    elseif algo == RULE_SW or algo == RULE_FW then
      local limit, W
      limit, W, pos = sunpack('<i4i8', spec, pos)
      if algo == RULE_SW then
        ok, res, commit = check_sw(key, get, limit, W)
      else
        ok, res, commit = check_fw(key, get, limit, W)
      end
      undo = spack('<BBHi8i8', algo, 0, ki, W, res[5])
    elseif algo == RULE_CC then
      local limit, lease, node, seq
      limit, lease, node, seq, pos = sunpack('<i4i8I4I4', spec, pos)
      ok, res, commit = check_cc(key, held, limit, lease, node .. ':' .. seq)
      undo = spack('<BBHI4I4', algo, 0, ki, node, seq)
    elseif algo == RULE_QT then
      local limit, code, offset
      limit, code, offset, pos = sunpack('<i4BB', spec, pos)
      ok, res, commit = check_qt(key, get, limit, code, offset)
      undo = spack('<BBHi8', algo, 0, ki, res[5])
    else
      local rate, burst, max_delay
      rate, burst, max_delay, pos = sunpack('<di4i8', spec, pos)
      ok, res, commit = check_lb(key, get, rate, burst, max_delay)
      undo = spack('<BBHd', algo, 0, ki, rate)
    end
    return pos, flags % 2 == 1, ok, res, commit, undo
  end

  local function take(spec, pos)
    local _, nr
    _, nr, pos = sunpack('<I4B', spec, pos)
    local admit, retry, checked = true, 0, {}
    for i = 1, nr do
      local shadow, ok, res, commit, undo
      pos, shadow, ok, res, commit, undo = check(spec, pos)
      checked[i] = {ok, res, commit, undo}
      if not ok and not shadow and admit then admit, retry = false, res[2] end
    end
    local results, undos = {}, {}
    for i = 1, nr do
      local c = checked[i]
      if admit and c[1] then
        c[3](put)
        undos[#undos + 1] = c[4]
      end
      local r = c[2]
      results[i] = spack(RULE_RESULT, r[1], r[2], r[3], r[4], r[5])
    end
    return pos, admit, retry, results, undos
  end
  return take
end

-- undo_rules(base, spec) undoes the entries of spec (op "unrules" format)
-- on KEYS[base + ki]; returns how many it undid.
local function undo_rules(base, spec)
  local pos, n = 1, 0
  while pos <= #spec do
    local algo, unused, ki
    algo, unused, ki, pos = sunpack('<BBH', spec, pos)
    local key = KEYS[base + ki]
    if algo == RULE_TB then
      local s = bucket_state(redis.call('GET', key))
      if s and now < s[2] + ttl_us(s[1], s[3], s[4]) then
        local tokens, at = tokens_now(s, s[3], s[4])
        if tokens + 1 >= s[4] then
          redis.call('DEL', key) -- full again: as if never taken
        else
          write_bucket(key, {tokens + 1, at, s[3], s[4]})
        end
        n = n + 1
      end
    elseif algo == RULE_SW or algo == RULE_FW then
      local W, charged
      W, charged, pos = sunpack('<i8i8', spec, pos)
      local v = redis.call('GET', key)
      if algo == RULE_SW then
        local cur, prev, curr = sliding(v, W)
        if charged == cur and curr > 0 then
          write_sliding(key, cur, W, prev, curr - 1)
          n = n + 1
        elseif charged == cur - W and prev > 0 then
          write_sliding(key, cur, W, prev - 1, curr)
          n = n + 1
        end
      else
        local cur, count = fixed(v, W)
        if charged == cur and count > 0 then
          write_fixed(key, cur, W, count - 1)
          n = n + 1
        end
      end
    elseif algo == RULE_CC then
      local node, seq
      node, seq, pos = sunpack('<I4I4', spec, pos)
      n = n + redis.call('ZREM', key, node .. ':' .. seq)
    elseif algo == RULE_QT then
      local charged
      charged, pos = sunpack('<i8', spec, pos)
      local q = quota_state(redis.call('GET', key))
      if q and q[1] == charged and q[2] > 0 then
        write_quota(key, q[1], q[2] - 1, q[3])
        n = n + 1
      end
    else
      local rate
      rate, pos = sunpack('<d', spec, pos)
      local tat = leaky(redis.call('GET', key)) - turn_us(rate)
      if tat <= now then
        redis.call('DEL', key)
      else
        write_leaky(key, tat)
      end
      n = n + 1
    end
  end
  return n
end

-- Operations -------------------------------------------------------------

local function rules_op()
  local ndec, spec = tonumber(ARGV[3]), ARGV[4]
  local take = new_rule_run(0)
  local out, pos = {}, 1
  for _ = 1, ndec do
    local _, _, results
    pos, _, _, results = take(spec, pos)
    for i = 1, #results do out[#out + 1] = results[i] end
  end
  return table.concat(out)
end

local function decide_rules()
  local ndec, m, dspec, u, rspec = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]), ARGV[7]
  local take = new_rule_run(m + u)
  local rules_out, undos, pieces, last, pos = {}, {}, {}, 0, 1
  for d = 1, ndec do
    local at = sunpack('<I4', rspec, pos)
    local admit, retry, results
    pos, admit, retry, results, undos[d] = take(rspec, pos)
    for i = 1, #results do rules_out[#rules_out + 1] = results[i] end
    if at > 0 then -- the placeholder: '<Hdi4' = 14 bytes at offset at - 1
      pieces[#pieces + 1] = string.sub(dspec, last + 1, at - 1)
      pieces[#pieces + 1] = spack('<Hdi4', 0, admit and 0 or retry, admit and 1 or 0)
      last = at - 1 + 14
    end
  end
  pieces[#pieces + 1] = string.sub(dspec, last + 1)
  ARGV[5] = table.concat(pieces)
  local reply = decide(tonumber(ARGV[8] or ''), ARGV[9] == '1')
  for d = 1, ndec do
    local allowed = sunpack('<i8', reply, (d - 1) * 80 + 1)
    if allowed ~= 1 and #undos[d] > 0 then undo_rules(m + u, table.concat(undos[d])) end
  end
  return reply .. table.concat(rules_out)
end

local function unrules_op()
  return undo_rules(0, ARGV[3])
end

local function renew_op()
  local lease, spec = tonumber(ARGV[3]), ARGV[4]
  local pos, n = 1, 0
  while pos <= #spec do
    local ki, node, seq
    ki, node, seq, pos = sunpack('<HI4I4', spec, pos)
    local renewed = redis.call('ZADD', KEYS[ki], 'XX', 'CH', now + lease, node .. ':' .. seq)
    if renewed > 0 then
      redis.call('PEXPIRE', KEYS[ki], mceil((lease + SLACK_US) / 1000))
      n = n + renewed
    end
  end
  return n
end

ops.rules = rules_op
ops.decide_rules = decide_rules
ops.unrules = unrules_op
ops.renew = renew_op
