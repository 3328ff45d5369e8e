--[[
wire: the wire format of script/wire.go, generated from it by
script/internal/wiregen (DO NOT EDIT). The first file of the library: it
defines the table wire and nothing else. For every layout X (snake case):
  wire.read_X(s, pos, t) reads X from s at pos into table t (fields in snake
    case) and returns the position after it;
  wire.pack_X(t) packs t as X;
and for a stored state (a layout that starts with a constant): wire.X(v)
returns a new table of v's fields when v (a Redis value, or false) is that
state, else false; wire.pack_X(t) packs it with its constant.
wire.<CONST> are the codes of wire.go.
The table is one constructor, so that Redis, which runs the library's top
level on every call, makes it at its full size instead of growing it.
]]

local wire = {
  PERIOD_DAY = 0,
  PERIOD_WEEK = 1,
  PERIOD_MONTH = 2,
  PERIOD_TABLE = 3,
  RULES_HERE = 0,
  RULES_ADMITTED = 1,
  RULES_REFUSED = 2,
  CUSTOMER_HERE = 0,
  CUSTOMER_ADMITTED = 1,
  CUSTOMER_REFUSED = 2,
  RUN_DONE = 0,
  RUN_DUPLICATE = 1,
  RUN_UNRESTORED = 2,
  REFUSED_NONE = 0,
  REFUSED_BUCKET = 1,
  REFUSED_RULES = 2,
  REFUSED_QUOTA = 3,
  REFUSED_UNRESTORED = 4,
  REFUSED_PERIOD = 5,
  REFUSED_CUSTOMER = 6,
  CHARGE_ADMITTED = 0,
  CHARGE_SETTLE = 1,
  CHARGE_SETTLE_UNDECIDED = 2,
  WINDOW_RUNS = 256,
  RESTORE_MARK = "~r",
  USAGE_EXTRA = "#x",

  -- DecideArgs, 31 bytes
  read_decide_args = function(s, pos, t)
    t.decisions, t.charges, t.states, t.usages, t.rule_states, t.changes, t.window, t.run, t.await, t.lease_us, pos = struct.unpack('<HHHHHHHi8Bi8', s, pos)
    return pos
  end,
  pack_decide_args = function(t)
    return struct.pack('<HHHHHHHi8Bi8', t.decisions, t.charges, t.states, t.usages, t.rule_states, t.changes, t.window, t.run, t.await, t.lease_us)
  end,

  -- DecisionSpec, 45 bytes
  read_decision_spec = function(s, pos, t)
    t.buckets, t.rules, t.plan, t.rules_elsewhere, t.rules_retry_us, t.quota, t.limit, t.period, t.offset, t.usage, t.want, t.cost, t.customer, t.customer_limit, t.customer_at, t.customer_retry_us, t.customer_period, t.customer_offset, pos = struct.unpack('<BBBBi8Hi4BBHHi4Hi4Bi8BB', s, pos)
    return pos
  end,
  pack_decision_spec = function(t)
    return struct.pack('<BBBBi8Hi4BBHHi4Hi4Bi8BB', t.buckets, t.rules, t.plan, t.rules_elsewhere, t.rules_retry_us, t.quota, t.limit, t.period, t.offset, t.usage, t.want, t.cost, t.customer, t.customer_limit, t.customer_at, t.customer_retry_us, t.customer_period, t.customer_offset)
  end,

  -- PeriodBounds, 32 bytes
  read_period_bounds = function(s, pos, t)
    t.from_s, t.start_s, t.end_s, t.to_s, pos = struct.unpack('<i8i8i8i8', s, pos)
    return pos
  end,
  pack_period_bounds = function(t)
    return struct.pack('<i8i8i8i8', t.from_s, t.start_s, t.end_s, t.to_s)
  end,

  -- BucketSpec, 23 bytes
  read_bucket_spec = function(s, pos, t)
    t.key, t.rate, t.burst, t.admitted, t.retry_us, pos = struct.unpack('<Hdi4Bi8', s, pos)
    return pos
  end,
  pack_bucket_spec = function(t)
    return struct.pack('<Hdi4Bi8', t.key, t.rate, t.burst, t.admitted, t.retry_us)
  end,

  -- RuleSpec, 54 bytes
  read_rule_spec = function(s, pos, t)
    t.algorithm, t.shadow, t.key, t.rate, t.burst, t.limit, t.window_us, t.max_delay_us, t.lease_us, t.node, t.seq, t.period, t.offset, pos = struct.unpack('<BBHdi4i4i8i8i8I4I4BB', s, pos)
    return pos
  end,
  pack_rule_spec = function(t)
    return struct.pack('<BBHdi4i4i8i8i8I4I4BB', t.algorithm, t.shadow, t.key, t.rate, t.burst, t.limit, t.window_us, t.max_delay_us, t.lease_us, t.node, t.seq, t.period, t.offset)
  end,

  -- ChargeSpec, 49 bytes
  read_charge_spec = function(s, pos, t)
    t.quota, t.period, t.offset, t.usage, t.units, t.at_us, t.run, t.requests, t.customer, t.bucket, t.kind, t.reserved, t.prev, t.customer_period, t.customer_offset, pos = struct.unpack('<HBBHi4i8i8i4HHBi4i8BB', s, pos)
    return pos
  end,
  pack_charge_spec = function(t)
    return struct.pack('<HBBHi4i8i8i4HHBi4i8BB', t.quota, t.period, t.offset, t.usage, t.units, t.at_us, t.run, t.requests, t.customer, t.bucket, t.kind, t.reserved, t.prev, t.customer_period, t.customer_offset)
  end,

  -- DecideReply, 5 bytes
  read_decide_reply = function(s, pos, t)
    t.status, t.counted, t.skipped, pos = struct.unpack('<BHH', s, pos)
    return pos
  end,
  pack_decide_reply = function(t)
    return struct.pack('<BHH', t.status, t.counted, t.skipped)
  end,

  -- DecisionReply, 95 bytes
  read_decision_reply = function(s, pos, t)
    t.allowed, t.refused, t.bucket, t.now_us, t.retry_us, t.plan_left, t.plan_full_us, t.quota_left, t.quota_start, t.quota_end, t.granted, t.lease_wait_us, t.customer_left, t.customer_start, t.customer_end, pos = struct.unpack('<BBBi8i8i8i8i8i8i8i4i8i8i8i8', s, pos)
    return pos
  end,
  pack_decision_reply = function(t)
    return struct.pack('<BBBi8i8i8i8i8i8i8i4i8i8i8i8', t.allowed, t.refused, t.bucket, t.now_us, t.retry_us, t.plan_left, t.plan_full_us, t.quota_left, t.quota_start, t.quota_end, t.granted, t.lease_wait_us, t.customer_left, t.customer_start, t.customer_end)
  end,

  -- RuleReply, 33 bytes
  read_rule_reply = function(s, pos, t)
    t.admitted, t.retry_us, t.remaining, t.reset_us, t.aux, pos = struct.unpack('<Bi8i8i8i8', s, pos)
    return pos
  end,
  pack_rule_reply = function(t)
    return struct.pack('<Bi8i8i8i8', t.admitted, t.retry_us, t.remaining, t.reset_us, t.aux)
  end,

  -- RefundSpec, 6 bytes
  read_refund_spec = function(s, pos, t)
    t.key, t.tokens, pos = struct.unpack('<Hi4', s, pos)
    return pos
  end,
  pack_refund_spec = function(t)
    return struct.pack('<Hi4', t.key, t.tokens)
  end,

  -- UnleaseArgs, 8 bytes
  read_unlease_args = function(s, pos, t)
    t.leases, t.states, t.usages, t.changes, pos = struct.unpack('<HHHH', s, pos)
    return pos
  end,
  pack_unlease_args = function(t)
    return struct.pack('<HHHH', t.leases, t.states, t.usages, t.changes)
  end,

  -- LeaseSpec, 27 bytes
  read_lease_spec = function(s, pos, t)
    t.buckets, t.windows, t.quota, t.usage, t.spent, t.day, t.unspent, t.period_start_s, t.held, pos = struct.unpack('<BBHHi4i4i4i8B', s, pos)
    return pos
  end,
  pack_lease_spec = function(t)
    return struct.pack('<BBHHi4i4i4i8B', t.buckets, t.windows, t.quota, t.usage, t.spent, t.day, t.unspent, t.period_start_s, t.held)
  end,

  -- LeaseBucketSpec, 18 bytes
  read_lease_bucket_spec = function(s, pos, t)
    t.key, t.taken, t.unspent, t.taken_at_us, pos = struct.unpack('<Hi4i4i8', s, pos)
    return pos
  end,
  pack_lease_bucket_spec = function(t)
    return struct.pack('<Hi4i4i8', t.key, t.taken, t.unspent, t.taken_at_us)
  end,

  -- LeaseWindowSpec, 23 bytes
  read_lease_window_spec = function(s, pos, t)
    t.key, t.algorithm, t.window_us, t.taken_at_us, t.unspent, pos = struct.unpack('<HBi8i8i4', s, pos)
    return pos
  end,
  pack_lease_window_spec = function(t)
    return struct.pack('<HBi8i8i4', t.key, t.algorithm, t.window_us, t.taken_at_us, t.unspent)
  end,

  -- UndoSpec, 35 bytes
  read_undo_spec = function(s, pos, t)
    t.algorithm, t.key, t.window_us, t.charged, t.node, t.seq, t.rate, pos = struct.unpack('<BHi8i8I4I4d', s, pos)
    return pos
  end,
  pack_undo_spec = function(t)
    return struct.pack('<BHi8i8I4I4d', t.algorithm, t.key, t.window_us, t.charged, t.node, t.seq, t.rate)
  end,

  -- RenewArgs, 8 bytes
  read_renew_args = function(s, pos, t)
    t.lease_us, pos = struct.unpack('<i8', s, pos)
    return pos
  end,
  pack_renew_args = function(t)
    return struct.pack('<i8', t.lease_us)
  end,

  -- RenewSpec, 10 bytes
  read_renew_spec = function(s, pos, t)
    t.key, t.node, t.seq, pos = struct.unpack('<HI4I4', s, pos)
    return pos
  end,
  pack_renew_spec = function(t)
    return struct.pack('<HI4I4', t.key, t.node, t.seq)
  end,

  -- SettleArgs, 12 bytes
  read_settle_args = function(s, pos, t)
    t.period_start_s, t.charge, pos = struct.unpack('<i8i4', s, pos)
    return pos
  end,
  pack_settle_args = function(t)
    return struct.pack('<i8i4', t.period_start_s, t.charge)
  end,

  -- QuotaArgs, 16 bytes
  read_quota_args = function(s, pos, t)
    t.limit, t.period, t.offset, t.set, t.remaining, t.today, pos = struct.unpack('<i4BBBi8B', s, pos)
    return pos
  end,
  pack_quota_args = function(t)
    return struct.pack('<i4BBBi8B', t.limit, t.period, t.offset, t.set, t.remaining, t.today)
  end,

  -- QuotaReply, 56 bytes
  read_quota_reply = function(s, pos, t)
    t.remaining, t.period_start_s, t.period_end_s, t.now_us, t.today, t.today_units, t.used, pos = struct.unpack('<i8i8i8i8i8i8i8', s, pos)
    return pos
  end,
  pack_quota_reply = function(t)
    return struct.pack('<i8i8i8i8i8i8i8', t.remaining, t.period_start_s, t.period_end_s, t.now_us, t.today, t.today_units, t.used)
  end,

  -- BucketState, 49 bytes
  bucket_state = function(v)
    if not v or #v ~= 49 or string.byte(v, 1) ~= 1 then return false end
    local t, _ = {}, nil
    _, t.tokens, t.at_us, t.rate, t.burst, t.leases, t.leased_until_us = struct.unpack('<Bdddddd', v)
    return t
  end,
  pack_bucket_state = function(t)
    return struct.pack('<Bdddddd', 1, t.tokens, t.at_us, t.rate, t.burst, t.leases, t.leased_until_us)
  end,

  -- QuotaState, 49 bytes
  quota_state = function(v)
    if not v or #v ~= 49 or string.byte(v, 1) ~= 2 then return false end
    local t, _ = {}, nil
    _, t.period_start_s, t.used, t.period_end_s, t.seq, t.leases, t.leased_until_us = struct.unpack('<Bdddddd', v)
    return t
  end,
  pack_quota_state = function(t)
    return struct.pack('<Bdddddd', 2, t.period_start_s, t.used, t.period_end_s, t.seq, t.leases, t.leased_until_us)
  end,

  -- SlidingState, 25 bytes
  sliding_state = function(v)
    if not v or #v ~= 25 or string.byte(v, 1) ~= 3 then return false end
    local t, _ = {}, nil
    _, t.start_us, t.prev, t.curr = struct.unpack('<Bddd', v)
    return t
  end,
  pack_sliding_state = function(t)
    return struct.pack('<Bddd', 3, t.start_us, t.prev, t.curr)
  end,

  -- FixedState, 17 bytes
  fixed_state = function(v)
    if not v or #v ~= 17 or string.byte(v, 1) ~= 4 then return false end
    local t, _ = {}, nil
    _, t.start_us, t.count = struct.unpack('<Bdd', v)
    return t
  end,
  pack_fixed_state = function(t)
    return struct.pack('<Bdd', 4, t.start_us, t.count)
  end,

  -- SlidingLeasedState, 41 bytes
  sliding_leased_state = function(v)
    if not v or #v ~= 41 or string.byte(v, 1) ~= 7 then return false end
    local t, _ = {}, nil
    _, t.start_us, t.prev, t.curr, t.leases, t.leased_until_us = struct.unpack('<Bddddd', v)
    return t
  end,
  pack_sliding_leased_state = function(t)
    return struct.pack('<Bddddd', 7, t.start_us, t.prev, t.curr, t.leases, t.leased_until_us)
  end,

  -- FixedLeasedState, 33 bytes
  fixed_leased_state = function(v)
    if not v or #v ~= 33 or string.byte(v, 1) ~= 8 then return false end
    local t, _ = {}, nil
    _, t.start_us, t.count, t.leases, t.leased_until_us = struct.unpack('<Bdddd', v)
    return t
  end,
  pack_fixed_leased_state = function(t)
    return struct.pack('<Bdddd', 8, t.start_us, t.count, t.leases, t.leased_until_us)
  end,

  -- LeakyState, 9 bytes
  leaky_state = function(v)
    if not v or #v ~= 9 or string.byte(v, 1) ~= 5 then return false end
    local t, _ = {}, nil
    _, t.tat_us = struct.unpack('<Bd', v)
    return t
  end,
  pack_leaky_state = function(t)
    return struct.pack('<Bd', 5, t.tat_us)
  end,

  -- RunWindow, 265 bytes
  run_window = function(v)
    if not v or #v ~= 265 or string.byte(v, 1) ~= 6 then return false end
    local t, _ = {}, nil
    _, t.max, t.ran = struct.unpack('<Bdc256', v)
    return t
  end,
  pack_run_window = function(t)
    return struct.pack('<Bdc256', 6, t.max, t.ran)
  end,
}
