--[[
give: the operations that give back what a node took and did not use.
Takes wire, US, SLACK_US, mmin, mmax, mceil, now (clock.lua), ttl_us, give_back,
write_bucket (bucket.lua), write_quota, count_usage, mark_changed (usage.lua),
rules_lib (rules.lua).

op "refund": give back tokens requests took from buckets of this slot but
did not use, because a limit in another slot refused them (Redis Cluster).
  KEYS  bucket states     ARGV 3 wire.refund_specs, one after the other
  Each bucket gets tokens = min(b, tokens now + given back) under the
  limits it is stored with, whatever limits the take ran under (a decision
  under other limits may have rebased it since). A bucket full again is
  deleted (an absent state is a full bucket); an absent or expired state
  stays absent.
  Reply: the number of buckets written.

op "unlease": end capacity leases: give back what a node took with op
"decide" (want > 1) and did not spend, and count the requests it admitted
on them, on the UTC day of the take.
  KEYS  as op "decide"'s: states, usage hashes, then the change set
  ARGV  3 wire.unlease_args, then per lease a wire.lease_spec, its
          wire.lease_bucket_specs (its buckets and TOKEN_BUCKET rules) and
          its wire.lease_window_specs (FIXED_WINDOW and SLIDING_WINDOW
          rules)
  A bucket gets back y = min(g, n - r * (now - t0)) tokens (nothing unless
  positive), n taken and g unspent at t0, r the rate it is stored with,
  under the limits it is stored with (as op "refund"). The subtraction is
  the refill the bucket had while the lease held its tokens: a bucket that
  refilled to full meanwhile would have lost that refill at its burst had
  the tokens stayed, so giving all of g back could exceed the
  burst + rate × (T + L) bound (docs/leases.md proves the rule). Unspent
  quota units come back whole, unless the state is of another period by
  now; a window rule's go back to the window of the take (rules.lua,
  give_back_window). A lease_spec with held 1 trims a lease that goes on
  (Redis Cluster: a slot took more than the lease's other levels could):
  what it names goes back by the same rule, and its levels still count the
  lease out.
  Reply: the number of states written.

op "unrules": undo rule charges of requests another limit refused, and end
requests in flight of CONCURRENCY rules.
  KEYS  rule states       ARGV 3 wire.undo_specs, one after the other
  Reply: the number of entries undone.

op "renew": extend the leases of CONCURRENCY requests in flight.
  KEYS  sorted sets       ARGV 3 wire.renew_args, then wire.renew_specs
  A member's score becomes now + lease if the member is still there.
  Reply: the number of members renewed.
]]

-- give_back_at gives back amount(s) tokens (nothing unless positive) to
-- the bucket of KEYS[ki] whose value is vals[ki], when its state is
-- present and not expired; vals[ki] follows. It reports whether it wrote.
local function give_back_at(vals, ki, amount)
  local s = wire.bucket_state(vals[ki])
  if not s or now >= s.at_us + ttl_us(s.tokens, s.rate, s.burst) then return false end
  local leases = s.leases
  local back = amount(s)
  if back <= 0 then
    if s.leases ~= leases then
      vals[ki] = wire.pack_bucket_state(s)
      write_bucket(KEYS[ki], s)
      return true
    end
    return false
  end
  s = give_back(s, back)
  if s then
    vals[ki] = wire.pack_bucket_state(s)
    write_bucket(KEYS[ki], s)
  else
    vals[ki] = false
    redis.call('DEL', KEYS[ki])
  end
  return true
end

-- the values of KEYS[1..n], read at once
local function read_values(n)
  local vals = {}
  for i = 1, n, 1000 do
    local part = redis.call('MGET', unpack(KEYS, i, mmin(n, i + 999)))
    for j = 1, #part do vals[i + j - 1] = part[j] end
  end
  return vals
end

local function refund()
  local spec = ARGV[3]
  local vals = read_values(#KEYS)
  local written, pos, r = 0, 1, {}
  while pos <= #spec do
    pos = wire.read_refund_spec(spec, pos, r)
    local tokens = r.tokens
    if give_back_at(vals, r.key, function() return tokens end) then written = written + 1 end
  end
  return written
end

local function unlease()
  local spec = ARGV[3]
  local a = {}
  local pos = wire.read_unlease_args(spec, 1, a)
  local changes = a.changes > 0 and KEYS[a.changes] or nil
  local vals = read_values(a.states)
  local written, l, b, w, marks = 0, {}, {}, {}, {}
  local give_back_window -- rules_lib's, made for the first window
  for _ = 1, a.leases do
    pos = wire.read_lease_spec(spec, pos, l)
    if l.quota > 0 then
      local q = wire.quota_state(vals[l.quota])
      if q and q.period_start_s == l.period_start_s then
        q.used, q.seq = mmax(0, q.used - l.unspent), q.seq + 1
        if l.held == 0 then q.leases = mmax(0, q.leases - 1) end
        vals[l.quota] = wire.pack_quota_state(q)
        write_quota(KEYS[l.quota], q, q.period_end_s)
        written = written + 1
      end
    end
    for _ = 1, l.buckets do
      pos = wire.read_lease_bucket_spec(spec, pos, b)
      local taken, unspent, at, ends = b.taken, b.unspent, b.taken_at_us, l.held == 0
      -- less the refill of the hold, at the rate the bucket is stored with;
      -- an ended lease is counted back in
      local held = function(s)
        if ends then s.leases = mmax(0, s.leases - 1) end
        return mmin(unspent, taken - s.rate * mmax(0, now - at) / US)
      end
      if give_back_at(vals, b.key, held) then written = written + 1 end
    end
    for _ = 1, l.windows do
      pos = wire.read_lease_window_spec(spec, pos, w)
      if not give_back_window then give_back_window = select(3, rules_lib()) end
      if give_back_window(vals, w.key, w, l.held == 0) then written = written + 1 end
    end
    if l.usage > 0 and l.spent > 0 then count_usage(KEYS[a.states + l.usage], l.spent, 0, l.day, marks) end
  end
  mark_changed(changes, marks)
  return written
end

local function unrules()
  local spec = ARGV[3]
  local _, undo_rule = rules_lib()
  local n, pos, u = 0, 1, {}
  while pos <= #spec do
    pos = wire.read_undo_spec(spec, pos, u)
    if undo_rule(0, u) then n = n + 1 end
  end
  return n
end

local function renew()
  local spec = ARGV[3]
  local a, r = {}, {}
  local pos = wire.read_renew_args(spec, 1, a)
  local n = 0
  while pos <= #spec do
    pos = wire.read_renew_spec(spec, pos, r)
    local renewed = redis.call('ZADD', KEYS[r.key], 'XX', 'CH', now + a.lease_us, r.node .. ':' .. r.seq)
    if renewed > 0 then
      redis.call('PEXPIRE', KEYS[r.key], mceil((a.lease_us + SLACK_US) / 1000))
      n = n + renewed
    end
  end
  return n
end
