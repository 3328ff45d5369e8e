--[[
bucket: token buckets. Takes wire, and US, EPS, SLACK_US, mmin, mmax, now,
ceil_us (clock.lua).

A token bucket (the classic one, e.g. RFC 2697's committed bucket):
capacity burst, refill rate tokens/s, starting full, one token per request.
Its state (wire.bucket_state) holds tokens at a time, under the limits it
was written with. Tokens at now: min(burst, tokens + (now - at) * rate);
time is integer µs, so the only rounding is in that product, and a token
counts as present when tokens >= 1 - EPS (10/13 per second at t = 1.3 s is
admitted although 1.3 * 0.7692307692307693 may be 0.99999999999999989).

Limit changes: when a request's rate or burst differ from the stored ones,
tokens = min(tokens under the stored limits up to now, new burst) and the
state is rebased to the new limits at now. A state past its expiry moment
(full again + 1 s, or 400 days at rate 0) counts as absent, exactly as if
Redis had expired the key, whatever clock the caller uses. Time that goes
back (a failover to a server whose clock is behind) refills nothing twice.

Capacity leases (docs/leases.md): a bucket or quota state a lease took
units of counts its leases out (leases) and until when they may hold
them (leased_until_us); op "unlease" counts a lease back in. A decision it
refuses meanwhile is told how long to wait (lease_wait): their units may
come back.

Defines: RATE0_TTL_US, until_full, ttl_us, tokens_now, give_back,
write_bucket, lease_taken, lease_wait.
]]

local RATE0_TTL_US = 400 * 86400 * US

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

-- tokens_now(s, rate, burst) -> tokens at now under the limits rate and
-- burst, the time they are counted from, and whether the state must be
-- rebased to those limits. s is a bucket state or false (a full bucket).
local function tokens_now(s, rate, burst)
  if not s then return burst, now, false end
  local tokens, at, srate, sburst = s.tokens, s.at_us, s.rate, s.burst
  if now >= at + ttl_us(tokens, srate, sburst) then return burst, now, false end
  if now > at then tokens = mmin(sburst, tokens + (now - at) * srate / US) end
  return mmin(tokens, burst), mmax(at, now), (srate ~= rate) or (sburst ~= burst)
end

-- give_back(s, back) -> bucket state s (present, not expired) with back
-- tokens added at now under the limits s is stored with (never the limits
-- of the take: a decision under other limits may have rebased it since,
-- and giving back under an older, higher burst would over-admit); false
-- when that fills it (an absent state is a full bucket)
local function give_back(s, back)
  local tokens, at = tokens_now(s, s.rate, s.burst)
  tokens = mmin(s.burst, tokens + back)
  if tokens >= s.burst then return false end
  s.tokens, s.at_us = tokens, at
  return s
end

-- SET of a bucket state with its TTL: until full again + 1 s, and never
-- before a lease holding its tokens ends (at least SLACK_US ahead, so PX > 0)
local function write_bucket(key, s)
  local expires = mmax(s.at_us + ttl_us(s.tokens, s.rate, s.burst), s.leased_until_us + SLACK_US)
  redis.call('SET', key, wire.pack_bucket_state(s), 'PX', mceil((expires - now) / 1000))
end

-- lease_taken counts a lease of state s (a bucket or quota state) taken
-- now that holds its units until leased (0: no lease)
local function lease_taken(s, leased)
  if leased == 0 then return end
  if s.leased_until_us <= now then s.leases = 0 end -- a dead node's leases are over
  s.leases, s.leased_until_us = s.leases + 1, mmax(s.leased_until_us, leased)
end

-- lease_wait(s) -> µs the leases out of state s (or false: absent) may
-- still hold units of it; 0 for none
local function lease_wait(s)
  if s and s.leases > 0 and s.leased_until_us > now then return s.leased_until_us - now end
  return 0
end
