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
]]

local wire = {}
wire.PERIOD_DAY = 0
wire.PERIOD_WEEK = 1
wire.PERIOD_MONTH = 2
wire.PERIOD_TABLE = 3
wire.RULES_HERE = 0
wire.RULES_ADMITTED = 1
wire.RULES_REFUSED = 2
wire.CUSTOMER_HERE = 0
wire.CUSTOMER_ADMITTED = 1
wire.CUSTOMER_REFUSED = 2
wire.RUN_DONE = 0
wire.RUN_DUPLICATE = 1
wire.RUN_UNRESTORED = 2
wire.REFUSED_NONE = 0
wire.REFUSED_BUCKET = 1
wire.REFUSED_RULES = 2
wire.REFUSED_QUOTA = 3
wire.REFUSED_UNRESTORED = 4
wire.REFUSED_PERIOD = 5
wire.REFUSED_CUSTOMER = 6
wire.CHARGE_ADMITTED = 0
wire.CHARGE_SETTLE = 1
wire.CHARGE_SETTLE_UNDECIDED = 2
wire.WINDOW_RUNS = 256
wire.RESTORE_MARK = "~r"
wire.USAGE_EXTRA = "#x"

-- DecideArgs, 31 bytes
function wire.read_decide_args(s, pos, t)
  t.decisions, t.charges, t.states, t.usages, t.rule_states, t.changes, t.window, t.run, t.await, t.lease_us, pos = struct.unpack('<HHHHHHHi8Bi8', s, pos)
  return pos
end
function wire.pack_decide_args(t)
  return struct.pack('<HHHHHHHi8Bi8', t.decisions, t.charges, t.states, t.usages, t.rule_states, t.changes, t.window, t.run, t.await, t.lease_us)
end

-- DecisionSpec, 45 bytes
function wire.read_decision_spec(s, pos, t)
  t.buckets, t.rules, t.plan, t.rules_elsewhere, t.rules_retry_us, t.quota, t.limit, t.period, t.offset, t.usage, t.want, t.cost, t.customer, t.customer_limit, t.customer_at, t.customer_retry_us, t.customer_period, t.customer_offset, pos = struct.unpack('<BBBBi8Hi4BBHHi4Hi4Bi8BB', s, pos)
  return pos
end
function wire.pack_decision_spec(t)
  return struct.pack('<BBBBi8Hi4BBHHi4Hi4Bi8BB', t.buckets, t.rules, t.plan, t.rules_elsewhere, t.rules_retry_us, t.quota, t.limit, t.period, t.offset, t.usage, t.want, t.cost, t.customer, t.customer_limit, t.customer_at, t.customer_retry_us, t.customer_period, t.customer_offset)
end

-- PeriodBounds, 32 bytes
function wire.read_period_bounds(s, pos, t)
  t.from_s, t.start_s, t.end_s, t.to_s, pos = struct.unpack('<i8i8i8i8', s, pos)
  return pos
end
function wire.pack_period_bounds(t)
  return struct.pack('<i8i8i8i8', t.from_s, t.start_s, t.end_s, t.to_s)
end

-- BucketSpec, 23 bytes
function wire.read_bucket_spec(s, pos, t)
  t.key, t.rate, t.burst, t.admitted, t.retry_us, pos = struct.unpack('<Hdi4Bi8', s, pos)
  return pos
end
function wire.pack_bucket_spec(t)
  return struct.pack('<Hdi4Bi8', t.key, t.rate, t.burst, t.admitted, t.retry_us)
end

-- RuleSpec, 54 bytes
function wire.read_rule_spec(s, pos, t)
  t.algorithm, t.shadow, t.key, t.rate, t.burst, t.limit, t.window_us, t.max_delay_us, t.lease_us, t.node, t.seq, t.period, t.offset, pos = struct.unpack('<BBHdi4i4i8i8i8I4I4BB', s, pos)
  return pos
end
function wire.pack_rule_spec(t)
  return struct.pack('<BBHdi4i4i8i8i8I4I4BB', t.algorithm, t.shadow, t.key, t.rate, t.burst, t.limit, t.window_us, t.max_delay_us, t.lease_us, t.node, t.seq, t.period, t.offset)
end

-- ChargeSpec, 49 bytes
function wire.read_charge_spec(s, pos, t)
  t.quota, t.period, t.offset, t.usage, t.units, t.at_us, t.run, t.requests, t.customer, t.bucket, t.kind, t.reserved, t.prev, t.customer_period, t.customer_offset, pos = struct.unpack('<HBBHi4i8i8i4HHBi4i8BB', s, pos)
  return pos
end
function wire.pack_charge_spec(t)
  return struct.pack('<HBBHi4i8i8i4HHBi4i8BB', t.quota, t.period, t.offset, t.usage, t.units, t.at_us, t.run, t.requests, t.customer, t.bucket, t.kind, t.reserved, t.prev, t.customer_period, t.customer_offset)
end

-- DecideReply, 5 bytes
function wire.read_decide_reply(s, pos, t)
  t.status, t.counted, t.skipped, pos = struct.unpack('<BHH', s, pos)
  return pos
end
function wire.pack_decide_reply(t)
  return struct.pack('<BHH', t.status, t.counted, t.skipped)
end

-- DecisionReply, 95 bytes
function wire.read_decision_reply(s, pos, t)
  t.allowed, t.refused, t.bucket, t.now_us, t.retry_us, t.plan_left, t.plan_full_us, t.quota_left, t.quota_start, t.quota_end, t.granted, t.lease_wait_us, t.customer_left, t.customer_start, t.customer_end, pos = struct.unpack('<BBBi8i8i8i8i8i8i8i4i8i8i8i8', s, pos)
  return pos
end
function wire.pack_decision_reply(t)
  return struct.pack('<BBBi8i8i8i8i8i8i8i4i8i8i8i8', t.allowed, t.refused, t.bucket, t.now_us, t.retry_us, t.plan_left, t.plan_full_us, t.quota_left, t.quota_start, t.quota_end, t.granted, t.lease_wait_us, t.customer_left, t.customer_start, t.customer_end)
end

-- RuleReply, 33 bytes
function wire.read_rule_reply(s, pos, t)
  t.admitted, t.retry_us, t.remaining, t.reset_us, t.aux, pos = struct.unpack('<Bi8i8i8i8', s, pos)
  return pos
end
function wire.pack_rule_reply(t)
  return struct.pack('<Bi8i8i8i8', t.admitted, t.retry_us, t.remaining, t.reset_us, t.aux)
end

-- RefundSpec, 6 bytes
function wire.read_refund_spec(s, pos, t)
  t.key, t.tokens, pos = struct.unpack('<Hi4', s, pos)
  return pos
end
function wire.pack_refund_spec(t)
  return struct.pack('<Hi4', t.key, t.tokens)
end

-- UnleaseArgs, 8 bytes
function wire.read_unlease_args(s, pos, t)
  t.leases, t.states, t.usages, t.changes, pos = struct.unpack('<HHHH', s, pos)
  return pos
end
function wire.pack_unlease_args(t)
  return struct.pack('<HHHH', t.leases, t.states, t.usages, t.changes)
end

-- LeaseSpec, 27 bytes
function wire.read_lease_spec(s, pos, t)
  t.buckets, t.windows, t.quota, t.usage, t.spent, t.day, t.unspent, t.period_start_s, t.held, pos = struct.unpack('<BBHHi4i4i4i8B', s, pos)
  return pos
end
function wire.pack_lease_spec(t)
  return struct.pack('<BBHHi4i4i4i8B', t.buckets, t.windows, t.quota, t.usage, t.spent, t.day, t.unspent, t.period_start_s, t.held)
end

-- LeaseBucketSpec, 18 bytes
function wire.read_lease_bucket_spec(s, pos, t)
  t.key, t.taken, t.unspent, t.taken_at_us, pos = struct.unpack('<Hi4i4i8', s, pos)
  return pos
end
function wire.pack_lease_bucket_spec(t)
  return struct.pack('<Hi4i4i8', t.key, t.taken, t.unspent, t.taken_at_us)
end

-- LeaseWindowSpec, 23 bytes
function wire.read_lease_window_spec(s, pos, t)
  t.key, t.algorithm, t.window_us, t.taken_at_us, t.unspent, pos = struct.unpack('<HBi8i8i4', s, pos)
  return pos
end
function wire.pack_lease_window_spec(t)
  return struct.pack('<HBi8i8i4', t.key, t.algorithm, t.window_us, t.taken_at_us, t.unspent)
end

-- UndoSpec, 35 bytes
function wire.read_undo_spec(s, pos, t)
  t.algorithm, t.key, t.window_us, t.charged, t.node, t.seq, t.rate, pos = struct.unpack('<BHi8i8I4I4d', s, pos)
  return pos
end
function wire.pack_undo_spec(t)
  return struct.pack('<BHi8i8I4I4d', t.algorithm, t.key, t.window_us, t.charged, t.node, t.seq, t.rate)
end

-- RenewArgs, 8 bytes
function wire.read_renew_args(s, pos, t)
  t.lease_us, pos = struct.unpack('<i8', s, pos)
  return pos
end
function wire.pack_renew_args(t)
  return struct.pack('<i8', t.lease_us)
end

-- RenewSpec, 10 bytes
function wire.read_renew_spec(s, pos, t)
  t.key, t.node, t.seq, pos = struct.unpack('<HI4I4', s, pos)
  return pos
end
function wire.pack_renew_spec(t)
  return struct.pack('<HI4I4', t.key, t.node, t.seq)
end

-- SettleArgs, 12 bytes
function wire.read_settle_args(s, pos, t)
  t.period_start_s, t.charge, pos = struct.unpack('<i8i4', s, pos)
  return pos
end
function wire.pack_settle_args(t)
  return struct.pack('<i8i4', t.period_start_s, t.charge)
end

-- QuotaArgs, 16 bytes
function wire.read_quota_args(s, pos, t)
  t.limit, t.period, t.offset, t.set, t.remaining, t.today, pos = struct.unpack('<i4BBBi8B', s, pos)
  return pos
end
function wire.pack_quota_args(t)
  return struct.pack('<i4BBBi8B', t.limit, t.period, t.offset, t.set, t.remaining, t.today)
end

-- QuotaReply, 56 bytes
function wire.read_quota_reply(s, pos, t)
  t.remaining, t.period_start_s, t.period_end_s, t.now_us, t.today, t.today_units, t.used, pos = struct.unpack('<i8i8i8i8i8i8i8', s, pos)
  return pos
end
function wire.pack_quota_reply(t)
  return struct.pack('<i8i8i8i8i8i8i8', t.remaining, t.period_start_s, t.period_end_s, t.now_us, t.today, t.today_units, t.used)
end

-- BucketState, 49 bytes
function wire.bucket_state(v)
  if not v or #v ~= 49 or string.byte(v, 1) ~= 1 then return false end
  local t, _ = {}, nil
  _, t.tokens, t.at_us, t.rate, t.burst, t.leases, t.leased_until_us = struct.unpack('<Bdddddd', v)
  return t
end
function wire.pack_bucket_state(t)
  return struct.pack('<Bdddddd', 1, t.tokens, t.at_us, t.rate, t.burst, t.leases, t.leased_until_us)
end

-- QuotaState, 49 bytes
function wire.quota_state(v)
  if not v or #v ~= 49 or string.byte(v, 1) ~= 2 then return false end
  local t, _ = {}, nil
  _, t.period_start_s, t.used, t.period_end_s, t.seq, t.leases, t.leased_until_us = struct.unpack('<Bdddddd', v)
  return t
end
function wire.pack_quota_state(t)
  return struct.pack('<Bdddddd', 2, t.period_start_s, t.used, t.period_end_s, t.seq, t.leases, t.leased_until_us)
end

-- SlidingState, 25 bytes
function wire.sliding_state(v)
  if not v or #v ~= 25 or string.byte(v, 1) ~= 3 then return false end
  local t, _ = {}, nil
  _, t.start_us, t.prev, t.curr = struct.unpack('<Bddd', v)
  return t
end
function wire.pack_sliding_state(t)
  return struct.pack('<Bddd', 3, t.start_us, t.prev, t.curr)
end

-- FixedState, 17 bytes
function wire.fixed_state(v)
  if not v or #v ~= 17 or string.byte(v, 1) ~= 4 then return false end
  local t, _ = {}, nil
  _, t.start_us, t.count = struct.unpack('<Bdd', v)
  return t
end
function wire.pack_fixed_state(t)
  return struct.pack('<Bdd', 4, t.start_us, t.count)
end

-- SlidingLeasedState, 41 bytes
function wire.sliding_leased_state(v)
  if not v or #v ~= 41 or string.byte(v, 1) ~= 7 then return false end
  local t, _ = {}, nil
  _, t.start_us, t.prev, t.curr, t.leases, t.leased_until_us = struct.unpack('<Bddddd', v)
  return t
end
function wire.pack_sliding_leased_state(t)
  return struct.pack('<Bddddd', 7, t.start_us, t.prev, t.curr, t.leases, t.leased_until_us)
end

-- FixedLeasedState, 33 bytes
function wire.fixed_leased_state(v)
  if not v or #v ~= 33 or string.byte(v, 1) ~= 8 then return false end
  local t, _ = {}, nil
  _, t.start_us, t.count, t.leases, t.leased_until_us = struct.unpack('<Bdddd', v)
  return t
end
function wire.pack_fixed_leased_state(t)
  return struct.pack('<Bdddd', 8, t.start_us, t.count, t.leases, t.leased_until_us)
end

-- LeakyState, 9 bytes
function wire.leaky_state(v)
  if not v or #v ~= 9 or string.byte(v, 1) ~= 5 then return false end
  local t, _ = {}, nil
  _, t.tat_us = struct.unpack('<Bd', v)
  return t
end
function wire.pack_leaky_state(t)
  return struct.pack('<Bd', 5, t.tat_us)
end

-- RunWindow, 265 bytes
function wire.run_window(v)
  if not v or #v ~= 265 or string.byte(v, 1) ~= 6 then return false end
  local t, _ = {}, nil
  _, t.max, t.ran = struct.unpack('<Bdc256', v)
  return t
end
function wire.pack_run_window(t)
  return struct.pack('<Bdc256', 6, t.max, t.ran)
end
