--[[
decide: op "decide", the decision of a batch of requests, all or nothing
per request (docs/behaviour.md, "Throttles and quota"). Takes wire, US,
SLACK_US, EPS, mmin, mmax, mfloor, now, days, day_of, ceil_us, period,
period_in (clock.lua), until_full, tokens_now, write_bucket, lease_taken,
lease_wait (bucket.lua), quota_used, write_quota, count_usage,
mark_changed, restored (usage.lua), rules_lib (rules.lua).

  KEYS  states (buckets and quotas), usage hashes, rule states, then the
        usage change set and the node's run window when named
  ARGV  3 wire.decide_args, its charges (wire.charge_spec, its
          wire.period_bounds when its period is wire.PERIOD_TABLE), then its
          decisions (wire.decision_spec, its wire.period_bounds when its
          period is wire.PERIOD_TABLE, the customer quota's when its
          customer_period is, its wire.bucket_specs, its wire.rule_specs)
  Reply: wire.decide_reply, a wire.decision_reply per decision, then a
  wire.rule_reply per rule of every decision, in order.

The decisions are decided in order, each exactly as if it ran alone after
the ones before it: states are read once (one MGET), kept in tables while
the decisions run, and each changed key is written once at the end. A busy
stage or account bucket is read and written once per run, not once per
request. A decision is admitted only if every bucket holds a token, its
rules admit (every rule that is not shadow) and the quota has room; then
all are charged, else nothing is (a shadow rule is charged only when the
request is admitted and the rule would have admitted it).

Capacity leases (docs/leases.md): a decision that wants w > 1 and is
admitted takes k = min(w, floor(tokens / LEASE_SHARE) of every bucket and
of every TOKEN_BUCKET rule, floor(room / LEASE_SHARE) of every FIXED_WINDOW
and SLIDING_WINDOW rule (limit - count; limit - est), floor((limit - used)
/ LEASE_SHARE) of the quota and of the customer quota), at least 1, from
every level at once; a rule of another algorithm, or a shadow rule that
would refuse, makes k 1 (levels decided in their own slots on Redis
Cluster, shared buckets, rules and a customer quota, took the node's want
there first: the node asks here for at most the least they took). The
node admits up to k - 1 more requests on the rest and gives back what it
did not spend (op "unlease"). A level a lease holds
units of counts its leases out and remembers until when they may hold
them (leased_until_us: now + the run's lease_us; op "unlease" counts a
lease back in); a decision it refuses while leases are out is told how
long to wait (lease_wait_us): their units may come back.

Exactly once (docs/behaviour.md, "What an outage costs"): a run names the
node's run window (wire.run_window) and its number. A run whose number the
window holds ran already and does nothing (wire.RUN_DUPLICATE). A charge
of requests admitted while Redis did not answer names the run that may
have decided them: when the window holds that run they were decided (and
charged then); otherwise they are counted, in the day and period of their
admission, and the run is entered in the window, so a late copy of it does
nothing. A settle (the charge of a request once its response is known:
a settled cost's difference from its reservation, a usage count) is a
charge too, so it counts once however often it is sent: a try whose reply
was lost is named by the next (prev), which does nothing when the window
holds it. Charges wait while the slot awaits its restore
(wire.RUN_UNRESTORED).
]]

local LEASE_SHARE = 4
local WINDOW_TTL_MS = 86400 * 1000

-- A window's byte per run: 0 not seen, RAN the run ran (or, for an
-- earlier try a charge names, counted in its stead), STOPPED a charge
-- named it as the lost decision of its request and counted it: the run
-- never ran and never will (a late copy does nothing), and every other
-- charge naming it counts too.
local RAN, STOPPED = 1, 2

-- window_mark(w, run) -> the byte of run (0, RAN or STOPPED), nil when the
-- window cannot tell (no window, or run older than it)
local function window_mark(w, run)
  if not w then return nil end
  if run > w.max then return 0 end
  if w.max - run >= wire.WINDOW_RUNS then return nil end
  return string.byte(w.ran, run % wire.WINDOW_RUNS + 1)
end

-- window_holds(w, run) -> true when run ran, false when it did not, nil
-- when the window cannot tell
local function window_holds(w, run)
  local mark = window_mark(w, run)
  if mark == nil then return nil end
  return mark == RAN
end

-- window_enter(w, run, mark) enters run in window w (a table) as mark
-- (default RAN; RAN is never turned into STOPPED), moving it on when run
-- is newer than its max
local function window_enter(w, run, mark)
  mark = mark or RAN
  local n = wire.WINDOW_RUNS
  if run > w.max then
    if run - w.max >= n then
      w.ran = string.rep('\0', n)
    else
      for r = w.max + 1, run - 1 do
        local i = r % n + 1
        w.ran = w.ran:sub(1, i - 1) .. '\0' .. w.ran:sub(i + 1)
      end
    end
    w.max = run
  elseif w.max - run >= n then
    return
  end
  local i = run % n + 1
  if string.byte(w.ran, i) == RAN then return end
  w.ran = w.ran:sub(1, i - 1) .. string.char(mark) .. w.ran:sub(i + 1)
end

local function decide()
  local spec = ARGV[3]
  local a = {}
  local pos = wire.read_decide_args(spec, 1, a)
  local m, u = a.states, a.usages
  local changes = a.changes > 0 and KEYS[a.changes] or nil

  local win
  if a.window > 0 then
    win = wire.run_window(redis.call('GET', KEYS[a.window])) or {max = 0, ran = string.rep('\0', wire.WINDOW_RUNS)}
    if (window_mark(win, a.run) or 0) ~= 0 then
      return wire.pack_decide_reply({status = wire.RUN_DUPLICATE, counted = 0, skipped = 0})
    end
  end
  local is_restored = not (changes and a.await == 1) or restored(changes)

  -- every state in one read (MGET answers false for an absent key and for
  -- a key of another type), in chunks within Lua's unpack limit
  local vals = {}
  for i = 1, m, 1000 do
    local part = redis.call('MGET', unpack(KEYS, i, mmin(m, i + 999)))
    for j = 1, #part do vals[i + j - 1] = part[j] end
  end

  -- States by key index, decoded on first use (false when absent); order
  -- lists the changed ones, to write once.
  local states, dirty, order = {}, {}, {}
  local ttl_end = {} -- quota key index -> the period end its TTL was set for
  local function bucket_at(ki)
    local s = states[ki]
    if s == nil then
      s = wire.bucket_state(vals[ki])
      states[ki] = s
    end
    return s
  end
  local function quota_at(ki)
    local s = states[ki]
    if s == nil then
      s = wire.quota_state(vals[ki])
      if s then ttl_end[ki] = s.period_end_s end
      states[ki] = s
    end
    return s
  end
  local function mark(ki)
    if not dirty[ki] then
      dirty[ki] = true
      order[#order + 1] = ki
    end
  end
  local function put_bucket(ki, tokens, at, rate, burst, leased)
    mark(ki)
    local s = states[ki] or {leases = 0, leased_until_us = 0}
    s.tokens, s.at_us, s.rate, s.burst = tokens, at, rate, burst
    lease_taken(s, leased)
    states[ki] = s
  end
  -- charge_quota adds units to the quota state ki in the period
  -- [start, stop) (never below 0: a settle gives units back), keeping a
  -- later stored start
  local function charge_quota(ki, start, stop, units, leased)
    local q = quota_at(ki)
    local used, kept = quota_used(q, start)
    q = q or {seq = 0, leases = 0, leased_until_us = 0}
    q.period_start_s, q.used, q.period_end_s, q.seq = kept, mmax(0, used + units), stop, q.seq + 1
    lease_taken(q, leased)
    states[ki] = q
    mark(ki)
  end

  -- usage key index -> day -> {requests, cost units beyond one per
  -- request} counted in this run
  local usage = {}
  local function count(ui, day, n, extra)
    local by_day = usage[ui]
    if not by_day then
      by_day = {}
      usage[ui] = by_day
    end
    local c = by_day[day]
    if not c then
      c = {0, 0}
      by_day[day] = c
    end
    c[1], c[2] = c[1] + n, c[2] + extra
  end

  -- Charges (wire.charge_spec): requests admitted without a decision, and
  -- settles. A charge whose earlier try (prev) ran was counted then; an
  -- admission whose run ran was decided then. A settle charges what the
  -- decision did not take when the decision ran (always for
  -- wire.CHARGE_SETTLE), else the whole cost, and no bucket.
  -- The runs a charge names are entered in the window after every charge
  -- of this run was read against it as it was before the run: charges
  -- that name one run (a batch's lost decision, or the failed try they
  -- were sent in together) are each counted, not the first alone.
  local reply = {status = wire.RUN_DONE, counted = 0, skipped = 0}
  local c, pt, cpt, named = {}, {}, {}, {}
  -- charge_bounds is the period of code and offset (or table) holding at
  local function charge_bounds(at, code, offset, table)
    if code == wire.PERIOD_TABLE then return period_in(table, at) end
    return period(day_of(at), code, offset)
  end
  for _ = 1, a.charges do
    pos = wire.read_charge_spec(spec, pos, c)
    if c.period == wire.PERIOD_TABLE then pos = wire.read_period_bounds(spec, pos, pt) end
    if c.customer_period == wire.PERIOD_TABLE then pos = wire.read_period_bounds(spec, pos, cpt) end
    local ran = c.kind == wire.CHARGE_SETTLE or (c.run ~= 0 and window_holds(win, c.run))
    if (c.prev ~= 0 and window_holds(win, c.prev)) or (ran and c.kind == wire.CHARGE_ADMITTED) then
      reply.skipped = reply.skipped + 1
    elseif not is_restored then
      reply.status = wire.RUN_UNRESTORED
    else
      local at = mmin(c.at_us, now)
      local units = c.units
      if ran then units = c.units - c.reserved end
      -- the quota and the customer quota each in its own period of at
      if c.quota > 0 and units ~= 0 then
        local start, stop = charge_bounds(at, c.period, c.offset, pt)
        if start and stop * US > now then charge_quota(c.quota, start, stop, units, 0) end
      end
      if c.customer > 0 and units ~= 0 then
        local start, stop = charge_bounds(at, c.customer_period, c.customer_offset, cpt)
        if start and stop * US > now then charge_quota(c.customer, start, stop, units, 0) end
      end
      if ran and c.bucket > 0 and units ~= 0 then
        -- an absent state is a full bucket: it may go below 0 and refills
        -- from there, or fills up, under the limits it is stored with
        local s = bucket_at(c.bucket)
        if s then
          local tokens, at_us = tokens_now(s, s.rate, s.burst)
          put_bucket(c.bucket, mmin(s.burst, tokens - units), at_us, s.rate, s.burst, 0)
        end
      end
      if c.usage > 0 then
        local extra = 0
        if c.requests > 0 then extra = c.units - c.requests end
        count(c.usage, day_of(at), c.requests, extra)
      end
      if c.run ~= 0 then named[#named + 1] = {c.run, STOPPED} end
      if c.prev ~= 0 then named[#named + 1] = {c.prev, RAN} end
      reply.counted = reply.counted + 1
    end
  end
  if win then
    for _, e in ipairs(named) do window_enter(win, e[1], e[2]) end
  end

  -- quota period bounds by (period, offset): every decision has the same now
  local bounds = {}
  local function quota_bounds(code, offset)
    local k = code * 256 + offset
    local b = bounds[k]
    if not b then
      local start, stop = period(days, code, offset)
      b = {start, stop}
      bounds[k] = b
    end
    return b[1], b[2]
  end
  -- bounds_of is the current period of a quota of code and offset, or of
  -- its period table (nil when the table misses now)
  local function bounds_of(code, offset, table)
    if code == wire.PERIOD_TABLE then return period_in(table, now) end
    return quota_bounds(code, offset)
  end

  local check_rule -- rule_run over the rule states, made on first use
  local d, bk, rl, tokens, times, rebase, cpt = {}, {}, {}, {}, {}, {}, {}
  -- need(i, b): the tokens bucket i must hold to admit: one, or the cost
  -- of the caller's plan bucket (at most its burst, so a cost above the
  -- burst is admitted on a full bucket and takes it below 0)
  local function need(i, b)
    if i ~= d.plan then return 1 end
    return mmax(1, mmin(d.cost, b.burst))
  end
  local leased = now + a.lease_us
  local out, rules_out = {wire.pack_decide_reply(reply)}, {}
  for n = 1, a.decisions do
    pos = wire.read_decision_spec(spec, pos, d)
    if d.period == wire.PERIOD_TABLE then pos = wire.read_period_bounds(spec, pos, pt) end
    if d.customer_period == wire.PERIOD_TABLE then pos = wire.read_period_bounds(spec, pos, cpt) end
    local nb, nr = d.buckets, d.rules
    local r = {allowed = 0, refused = wire.REFUSED_NONE, bucket = 0, now_us = now, retry_us = 0, plan_left = -1,
      plan_full_us = -1, quota_left = -1, quota_start = 0, quota_end = 0, granted = 0, lease_wait_us = 0,
      customer_left = -1, customer_start = 0, customer_end = 0}
    local cost = d.cost

    -- Buckets: tokens now, and whether the state must be rebased. A bucket
    -- decided in another slot (key 0) has a token when it admitted there.
    for i = 1, nb do
      local b = bk[i] or {}
      bk[i] = b
      pos = wire.read_bucket_spec(spec, pos, b)
      if b.key == 0 then
        tokens[i], times[i], rebase[i] = b.admitted, now, false
      else
        tokens[i], times[i], rebase[i] = tokens_now(bucket_at(b.key), b.rate, b.burst)
      end
      if r.refused == wire.REFUSED_NONE and tokens[i] < need(i, b) - EPS then r.refused, r.bucket = wire.REFUSED_BUCKET, i end
    end

    -- Rules: every rule is checked (its result is reported either way);
    -- they admit when every rule that is not shadow admits.
    -- rooms: what each rule could lease (nil: it cannot); rules_wait: the
    -- lease wait of the first refusing rule
    local rules_ok, rules_retry, rules_wait, commits, rooms = true, 0, 0, {}, {}
    if d.rules_elsewhere ~= wire.RULES_HERE then
      rules_ok, rules_retry = d.rules_elsewhere == wire.RULES_ADMITTED, d.rules_retry_us
    end
    for i = 1, nr do
      local rule = rl[i] or {}
      rl[i] = rule
      pos = wire.read_rule_spec(spec, pos, rule)
      if not check_rule then
        local rule_run = rules_lib()
        check_rule = rule_run(m + u)
      end
      local ok, res, commit = check_rule(rule)
      if not ok and rule.shadow == 0 and rules_ok then rules_ok, rules_retry, rules_wait = false, res.retry_us, res.lease_wait_us or 0 end
      commits[i], rooms[i] = commit, ok and res.room
      rules_out[#rules_out + 1] = res
    end
    if r.refused == wire.REFUSED_NONE and not rules_ok then r.refused = wire.REFUSED_RULES end

    -- a keyed decision waits for the restore: refused, charging nothing
    if (d.usage > 0 or d.quota > 0) and not is_restored then r.refused = wire.REFUSED_UNRESTORED end

    -- Quota and customer quota: the units used in the current period of
    -- each (the customer's in its own slot on Redis Cluster: decided there
    -- first). A table that misses the run's time refuses before any other
    -- limit: the node decides again with tables around now_us. A request
    -- costing 0 units still needs one left: an overdrawn quota refuses
    -- every request.
    local used, kept, start, stop = 0, 0, 0, 0
    local cused, ckept, cstart, cstop = 0, 0, 0, 0
    local missed = false
    if d.quota > 0 then
      start, stop = bounds_of(d.period, d.offset, pt)
      if not start then missed, start, stop = true, 0, 0 end
    end
    if d.customer > 0 then
      cstart, cstop = bounds_of(d.customer_period, d.customer_offset, cpt)
      if not cstart then missed, cstart, cstop = true, 0, 0 end
    end
    if missed then
      r.refused = wire.REFUSED_PERIOD
    else
      if d.quota > 0 then
        used, kept = quota_used(quota_at(d.quota), start)
        if r.refused == wire.REFUSED_NONE and used + mmax(cost, 1) > d.limit then r.refused = wire.REFUSED_QUOTA end
      end
      if d.customer > 0 then
        cused, ckept = quota_used(quota_at(d.customer), cstart)
        if r.refused == wire.REFUSED_NONE and cused + mmax(cost, 1) > d.customer_limit then r.refused = wire.REFUSED_CUSTOMER end
      end
    end
    if d.customer == 0 and d.customer_at == wire.CUSTOMER_REFUSED and r.refused == wire.REFUSED_NONE then
      r.refused = wire.REFUSED_CUSTOMER
    end

    if r.refused == wire.REFUSED_NONE then
      -- a lease takes at most 1/LEASE_SHARE of what every level has left
      -- (no lease for a cost other than 1)
      local k = mmax(d.want, 1)
      if cost ~= 1 then k = 1 end
      for i = 1, nb do
        if bk[i].key > 0 and k > 1 then k = mmin(k, mfloor((tokens[i] + EPS) / LEASE_SHARE)) end
      end
      for i = 1, nr do
        if k > 1 then k = rooms[i] and mmin(k, mfloor((rooms[i] + EPS) / LEASE_SHARE)) or 1 end
      end
      if d.quota > 0 and k > 1 then k = mmin(k, mfloor((d.limit - used) / LEASE_SHARE)) end
      if d.customer > 0 and k > 1 then k = mmin(k, mfloor((d.customer_limit - cused) / LEASE_SHARE)) end
      k = mmax(k, 1)
      local hold = k > 1 and leased or 0
      for i = 1, nb do
        local b = bk[i]
        if b.key > 0 then
          if i == d.plan then
            tokens[i] = tokens[i] - k * cost
          else
            tokens[i] = mmax(0, tokens[i] - k)
          end
          put_bucket(b.key, tokens[i], times[i], b.rate, b.burst, hold)
        end
      end
      for i = 1, nr do
        if commits[i] then commits[i](k, hold) end
      end
      if d.quota > 0 then
        charge_quota(d.quota, kept, stop, k * cost, hold)
        used = used + k * cost
      end
      if d.customer > 0 then
        charge_quota(d.customer, ckept, cstop, k * cost, hold)
        cused = cused + k * cost
      end
      if d.usage > 0 then count(d.usage, days, 1, cost - 1) end
      r.allowed, r.granted = 1, k
    else
      for i = 1, nb do
        if rebase[i] then put_bucket(bk[i].key, tokens[i], times[i], bk[i].rate, bk[i].burst, 0) end
      end
    end

    -- retry-after, and the wait for leases of the refusing level
    if r.refused == wire.REFUSED_BUCKET then
      local b = bk[r.bucket]
      if b.key == 0 then
        r.retry_us = b.retry_us -- decided in another slot: its own retry-after
      else
        if b.rate > 0 then
          -- refill starts at times[i], later than now only if time went back
          r.retry_us = mmax(1, times[r.bucket] - now + ceil_us((need(r.bucket, b) - tokens[r.bucket]) * US / b.rate))
        else
          r.retry_us = -1
        end
        r.lease_wait_us = lease_wait(bucket_at(b.key))
      end
    elseif r.refused == wire.REFUSED_RULES then
      r.retry_us, r.lease_wait_us = rules_retry, rules_wait
    elseif r.refused == wire.REFUSED_QUOTA then
      r.retry_us = stop * US - now
      r.lease_wait_us = lease_wait(quota_at(d.quota))
    elseif r.refused == wire.REFUSED_CUSTOMER then
      if d.customer > 0 then
        r.retry_us = cstop * US - now
        r.lease_wait_us = lease_wait(quota_at(d.customer))
      else
        r.retry_us = d.customer_retry_us
      end
    elseif r.refused == wire.REFUSED_UNRESTORED then
      r.retry_us = US
    end

    if d.plan >= 1 then
      local b = bk[d.plan]
      r.plan_left = mmax(0, mfloor(tokens[d.plan] + EPS))
      r.plan_full_us = until_full(tokens[d.plan], b.rate, b.burst)
      if r.plan_full_us > 0 then r.plan_full_us = r.plan_full_us + times[d.plan] - now end
    end
    if d.quota > 0 then
      r.quota_left, r.quota_start, r.quota_end = mmax(0, d.limit - used), start, stop
    end
    if d.customer > 0 then
      r.customer_left, r.customer_start, r.customer_end = mmax(0, d.customer_limit - cused), cstart, cstop
      -- a decision without a quota of the key's own reports the customer's
      -- period as the quota's (the lease's boundary and give-back read it)
      if d.quota == 0 then r.quota_start, r.quota_end = cstart, cstop end
    end
    out[#out + 1] = wire.pack_decision_reply(r)
  end

  -- Writes, one per changed key, each with its TTL.
  for _, ki in ipairs(order) do
    local s = states[ki]
    if s.tokens then
      write_bucket(KEYS[ki], s)
    else
      write_quota(KEYS[ki], s, ttl_end[ki])
    end
  end
  local marks = {}
  for ui, by_day in pairs(usage) do
    for day, n in pairs(by_day) do count_usage(KEYS[m + ui], n[1], n[2], day, marks) end
  end
  mark_changed(changes, marks)
  if win then
    window_enter(win, a.run)
    redis.call('SET', KEYS[a.window], wire.pack_run_window(win), 'PX', WINDOW_TTL_MS)
  end

  for _, res in ipairs(rules_out) do out[#out + 1] = wire.pack_rule_reply(res) end
  return table.concat(out)
end
