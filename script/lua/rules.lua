--[[
rules: the rate-limit rules of docs/rules.md, for op "decide" (a request's
rules are one level of its decision, after its buckets, before its quota)
and op "unrules". Takes wire, US, EPS, SLACK_US, mmin, mmax, mfloor, mceil,
now, days, ceil_us, period (clock.lua), until_full, ttl_us, tokens_now,
write_bucket, lease_taken, lease_wait (bucket.lua), quota_used,
write_quota (usage.lua).

A rule's state for one value of what it counts by is one key (one hash
tag, so one Redis Cluster slot):
  TOKEN_BUCKET (1)   wire.bucket_state
  SLIDING_WINDOW (2) wire.sliding_state: the current fixed window's start
                     (a multiple of the window), the previous and current
                     windows' counts; wire.sliding_leased_state while
                     capacity leases hold units of it
  FIXED_WINDOW (3)   wire.fixed_state: the window's start and count;
                     wire.fixed_leased_state while leases hold units of it
  CONCURRENCY (4)    a sorted set: one member "<node>:<seq>" per request in
                     flight, scored by the Unix µs its lease ends; members
                     past their score are gone (a dead node's requests)
  LEAKY_BUCKET (5)   wire.leaky_state: tat, when the queue of admitted
                     requests has drained (GCRA's theoretical arrival time)
  CALENDAR_QUOTA (6) wire.quota_state (seq always 0): a usage plan's quota
                     decided as a rule (a plan in shadow mode)
A value of another shape counts as absent. Every write sets a TTL: a
window until it can no longer count + 1 s, a sorted set until its latest
lease ends + 1 s, a leaky bucket until tat + 1 s.

The algorithms (W a window in µs, T = 1/rate in whole µs rounded up):
  TOKEN_BUCKET   as bucket.lua; one token per request.
  SLIDING_WINDOW with cur = floor(now/W)*W and f = (now - cur)/W,
                 est = prev * (1 - f) + curr; admitted when est + 1 <= limit.
  FIXED_WINDOW   the count of [cur, cur + W); admitted when count + 1 <= limit.
  CONCURRENCY    members left after removing those whose lease ended;
                 admitted when members + 1 <= limit, then the request's
                 member is added with score now + lease.
  LEAKY_BUCKET   the request's turn is start = max(now, tat), its delay
                 start - now; admitted when delay <= min(maxDelay, burst * T),
                 then tat = start + T (as OpenResty's limit-req: the excess
                 waits for its turn, up to a burst, instead of being refused).
  CALENDAR_QUOTA as usage.lua's quota; admitted when count + 1 <= limit.

Capacity leases (docs/leases.md): the check of a TOKEN_BUCKET, FIXED_WINDOW
or SLIDING_WINDOW rule reports its room (tokens; limit - count; limit -
est) and its commit takes the decision's k units of it, counting the lease
out as a plan bucket does (lease_taken; a window's leases are over once
the window they were taken in is no longer counted). Op "unlease" gives a
token bucket's unspent tokens back as a plan bucket's, and a window's
(give_back_window) to the window the take counted them in, while the state
still counts it: a sliding window's current count, or its previous one
once the window moved on (the lease ended at its window's end, so the
units belong there). The other algorithms report no room: a decision with
one of them takes no lease.

Defines: rules_lib() -> rule_run(base), undo_rule(base, u),
give_back_window(vals, ki, w): the algorithms are made when a run first
needs them, since Redis runs the library's top level on every call and
most runs name no rule.
]]

local function rules_lib()
  local RULE_TB, RULE_SW, RULE_FW, RULE_CC, RULE_LB, RULE_QT = 1, 2, 3, 4, 5, 6
  -- a refused CONCURRENCY request may retry after 1 s
  local CC_RETRY_US = US

  -- leases_of(s) -> the leases out of window state s (false: none), as a
  -- table {leases, leased_until_us}
  local function leases_of(s)
    if s and s.leases then return {leases = s.leases, leased_until_us = s.leased_until_us} end
    return {leases = 0, leased_until_us = 0}
  end

  -- sliding(v, W) -> current window start, prev, curr at now and the leases
  -- out (leases_of)
  local function sliding(v, W)
    local cur = mfloor(now / W) * W
    local s = wire.sliding_state(v) or wire.sliding_leased_state(v)
    if s then
      if s.start_us == cur then return cur, s.prev, s.curr, leases_of(s) end
      if s.start_us == cur - W then return cur, s.curr, 0, leases_of(s) end
    end
    return cur, 0, 0, leases_of(false)
  end

  -- write_window(key, t, pack, pack_leased, expires, leases) writes window
  -- state t, with the leases out when they still hold units (and a TTL that
  -- outlasts them), and returns the value written
  local function write_window(key, t, pack, pack_leased, expires, leases)
    local v
    if leases and lease_wait(leases) > 0 then
      t.leases, t.leased_until_us = leases.leases, leases.leased_until_us
      v, expires = pack_leased(t), mmax(expires, leases.leased_until_us + SLACK_US)
    else
      v = pack(t)
    end
    redis.call('SET', key, v, 'PX', mceil((expires - now) / 1000))
    return v
  end

  local function write_sliding(key, cur, W, prev, curr, leases)
    return write_window(key, {start_us = cur, prev = prev, curr = curr}, wire.pack_sliding_state,
      wire.pack_sliding_leased_state, cur + 2 * W + SLACK_US, leases)
  end

  -- fixed(v, W) -> current window start, count at now and the leases out
  -- (leases_of)
  local function fixed(v, W)
    local cur = mfloor(now / W) * W
    local s = wire.fixed_state(v) or wire.fixed_leased_state(v)
    if s and s.start_us == cur then return cur, s.count, leases_of(s) end
    return cur, 0, leases_of(false)
  end

  local function write_fixed(key, cur, W, count, leases)
    return write_window(key, {start_us = cur, count = count}, wire.pack_fixed_state, wire.pack_fixed_leased_state,
      cur + W + SLACK_US, leases)
  end

  -- tat of a leaky state (0 when absent)
  local function leaky(v)
    local s = wire.leaky_state(v)
    return s and s.tat_us or 0
  end

  local function write_leaky(key, tat)
    local v = wire.pack_leaky_state({tat_us = tat})
    redis.call('SET', key, v, 'PX', mceil((tat - now + SLACK_US) / 1000))
    return v
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

  -- the interval between a leaky bucket's turns: 1/rate in whole µs,
  -- rounded up (at most 1 µs slower than the rate), so that every time is a
  -- whole µs and no rounding builds up in tat
  local function turn_us(rate) return mmax(1, ceil_us(US / rate)) end

  -- Checks. A check reads one rule's state at now and returns whether it
  -- admits, its result (wire.rule_reply fields, the state before the
  -- request; a leasable rule's room, and on a refusal its lease_wait_us)
  -- and, when it admits, a commit function commit(put, k, leased) that
  -- charges it (k units, a lease held until leased when k > 1; only a
  -- leasable rule sees k > 1) and moves the result to the state after the
  -- charge. Reads go through the
  -- run's cache (get, held), and commits record what they wrote there (put),
  -- so later decisions of a run see earlier charges.

  local function check_tb(key, get, r)
    local rate, burst = r.rate, r.burst
    local stored = wire.bucket_state(get(key))
    local tokens, at = tokens_now(stored, rate, burst)
    local res = {admitted = 1, retry_us = 0, aux = 0, room = tokens}
    local function report(t)
      local full = until_full(t, rate, burst)
      if full > 0 then full = full + at - now end
      res.remaining, res.reset_us = mfloor(t + EPS), full
    end
    report(tokens)
    if tokens < 1 - EPS then
      res.admitted, res.retry_us = 0, -1
      if rate > 0 then res.retry_us = mmax(1, at - now + ceil_us((1 - tokens) * US / rate)) end
      res.lease_wait_us = lease_wait(stored)
      return false, res
    end
    return true, res, function(put, k, leased)
      local s = {tokens = mmax(0, tokens - k), at_us = at, rate = rate, burst = burst,
        leases = stored and stored.leases or 0, leased_until_us = stored and stored.leased_until_us or 0}
      lease_taken(s, leased)
      put(key, wire.pack_bucket_state(s))
      write_bucket(key, s)
      report(s.tokens)
    end
  end

  local function check_sw(key, get, r)
    local limit, W = r.limit, r.window_us
    local cur, prev, curr, leases = sliding(get(key), W)
    local elapsed = now - cur
    local est = prev * (1 - elapsed / W) + curr
    local res = {admitted = 1, retry_us = 0, remaining = mmax(0, mfloor(limit - est + EPS)), reset_us = cur + W - now, aux = cur,
      room = limit - est}
    if est + 1 > limit + EPS then
      res.admitted, res.retry_us = 0, sliding_retry(prev, curr, elapsed, W, limit)
      res.lease_wait_us = lease_wait(leases)
      return false, res
    end
    return true, res, function(put, k, leased)
      lease_taken(leases, leased)
      put(key, write_sliding(key, cur, W, prev, curr + k, leases))
      res.remaining = mmax(0, mfloor(limit - est - k + EPS))
    end
  end

  local function check_fw(key, get, r)
    local limit, W = r.limit, r.window_us
    local cur, count, leases = fixed(get(key), W)
    local res = {admitted = 1, retry_us = 0, remaining = mmax(0, limit - count), reset_us = cur + W - now, aux = cur,
      room = limit - count}
    if count + 1 > limit then
      res.admitted, res.retry_us = 0, -1
      if limit >= 1 then res.retry_us = res.reset_us end
      res.lease_wait_us = lease_wait(leases)
      return false, res
    end
    return true, res, function(put, k, leased)
      lease_taken(leases, leased)
      put(key, write_fixed(key, cur, W, count + k, leases))
      res.remaining = limit - count - k
    end
  end

  local function check_cc(key, held, r)
    local limit, n = r.limit, held(key)
    local res = {admitted = 1, retry_us = 0, remaining = mmax(0, limit - n), reset_us = -1, aux = 0}
    if n + 1 > limit then
      res.admitted, res.retry_us = 0, -1
      if limit >= 1 then res.retry_us = CC_RETRY_US end
      return false, res
    end
    return true, res, function(put)
      redis.call('ZADD', key, now + r.lease_us, r.node .. ':' .. r.seq)
      redis.call('PEXPIRE', key, mceil((r.lease_us + SLACK_US) / 1000))
      put(key, n + 1, true)
      res.remaining = limit - n - 1
    end
  end

  local function check_lb(key, get, r)
    local T = turn_us(r.rate)
    local start = mmax(now, leaky(get(key)))
    local delay = start - now
    local longest = mmin(r.max_delay_us, r.burst * T) -- the longest wait admitted
    local function left(wait) -- requests admitted now if the next waits wait
      if wait > longest then return 0 end
      return mfloor((longest - wait) / T) + 1
    end
    local res = {admitted = 1, retry_us = 0, remaining = left(delay), reset_us = delay, aux = delay}
    if delay > longest then
      res.admitted, res.retry_us = 0, delay - longest
      return false, res
    end
    return true, res, function(put)
      put(key, write_leaky(key, start + T))
      res.remaining, res.reset_us = left(delay + T), delay + T
    end
  end

  local function check_qt(key, get, r)
    local start, stop = period(days, r.period, r.offset)
    local count, kept = quota_used(wire.quota_state(get(key)), start)
    local res = {admitted = 1, retry_us = 0, remaining = mmax(0, r.limit - count), reset_us = stop * US - now, aux = kept}
    if count + 1 > r.limit then
      res.admitted, res.retry_us = 0, stop * US - now
      return false, res
    end
    return true, res, function(put)
      local q = {period_start_s = kept, used = count + 1, period_end_s = stop, seq = 0, leases = 0, leased_until_us = 0}
      put(key, wire.pack_quota_state(q))
      write_quota(key, q, -1)
      res.remaining = r.limit - count - 1
    end
  end

  -- rule_run(base) -> check(r): a run over rule states KEYS[base + key]. check
  -- decides one rule spec r (a wire.rule_spec table) and returns whether it
  -- admits, its result and, when it admits, its commit (see the checks).
  local function rule_run(base)
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
    -- put records a charged state: a packed value, or (held) a count of
    -- requests in flight
    local function put(key, v, is_held)
      if is_held then held_n[key] = v else cache[key] = v end
    end
    local checks = {[RULE_TB] = check_tb, [RULE_SW] = check_sw, [RULE_FW] = check_fw, [RULE_LB] = check_lb, [RULE_QT] = check_qt}
    return function(r)
      local key = KEYS[base + r.key]
      local ok, res, commit
      if r.algorithm == RULE_CC then
        ok, res, commit = check_cc(key, held, r)
      else
        ok, res, commit = checks[r.algorithm](key, get, r)
      end
      if commit then
        local c = commit
        commit = function(k, leased) c(put, k or 1, leased or 0) end
      end
      return ok, res, commit
    end
  end

  -- undo_rule(base, u) undoes one wire.undo_spec u on KEYS[base + u.key]
  -- (op "unrules"); it reports whether it undid anything.
  local function undo_rule(base, u)
    local key = KEYS[base + u.key]
    local algo = u.algorithm
    if algo == RULE_TB then
      local s = wire.bucket_state(redis.call('GET', key))
      if not s or now >= s.at_us + ttl_us(s.tokens, s.rate, s.burst) then return false end
      local tokens, at = tokens_now(s, s.rate, s.burst)
      if tokens + 1 >= s.burst then
        redis.call('DEL', key) -- full again: as if never taken
      else
        s.tokens, s.at_us = tokens + 1, at
        write_bucket(key, s)
      end
      return true
    elseif algo == RULE_SW then
      local cur, prev, curr, leases = sliding(redis.call('GET', key), u.window_us)
      if u.charged == cur and curr > 0 then
        write_sliding(key, cur, u.window_us, prev, curr - 1, leases)
        return true
      elseif u.charged == cur - u.window_us and prev > 0 then
        write_sliding(key, cur, u.window_us, prev - 1, curr, leases)
        return true
      end
    elseif algo == RULE_FW then
      local cur, count, leases = fixed(redis.call('GET', key), u.window_us)
      if u.charged == cur and count > 0 then
        write_fixed(key, cur, u.window_us, count - 1, leases)
        return true
      end
    elseif algo == RULE_CC then
      return redis.call('ZREM', key, u.node .. ':' .. u.seq) > 0
    elseif algo == RULE_QT then
      local q = wire.quota_state(redis.call('GET', key))
      if q and q.period_start_s == u.charged and q.used > 0 then
        q.used = q.used - 1
        write_quota(key, q, -1)
        return true
      end
    elseif algo == RULE_LB then
      local tat = leaky(redis.call('GET', key)) - turn_us(u.rate)
      if tat <= now then
        redis.call('DEL', key)
      else
        write_leaky(key, tat)
      end
      return true
    end
    return false
  end

  -- give_back_window(vals, ki, w, ends) gives back a lease's units of the
  -- FIXED_WINDOW or SLIDING_WINDOW rule state KEYS[ki] (value vals[ki],
  -- which follows) for one wire.lease_window_spec w (op "unlease"): its
  -- unspent units go back to the window that holds the take's time, while
  -- the state counts it (nothing goes to another window), and, when the
  -- lease ends, the lease is counted back in. It reports whether it wrote.
  local function give_back_window(vals, ki, w, ends)
    local W, v = w.window_us, vals[ki]
    if not v then return false end
    local charged = mfloor(w.taken_at_us / W) * W
    if w.algorithm == RULE_SW then
      local cur, prev, curr, leases = sliding(v, W)
      if charged == cur then
        curr = mmax(0, curr - w.unspent)
      elseif charged == cur - W then
        prev = mmax(0, prev - w.unspent)
      else
        return false
      end
      if ends then leases.leases = mmax(0, leases.leases - 1) end
      vals[ki] = write_sliding(KEYS[ki], cur, W, prev, curr, leases)
      return true
    end
    local cur, count, leases = fixed(v, W)
    if charged ~= cur then return false end
    if ends then leases.leases = mmax(0, leases.leases - 1) end
    vals[ki] = write_fixed(KEYS[ki], cur, W, mmax(0, count - w.unspent), leases)
    return true
  end

  return rule_run, undo_rule, give_back_window
end
