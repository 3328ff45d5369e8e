--[[
clock: the run's time and the calendar. Takes wire (wire.lua).

ARGV[2] is the time of the run in Unix µs, or "" to read Redis TIME:
production always sends ""; tests inject a clock. All time that limits or
counts usage is Redis time, never a node clock. Every operation of one run
sees the same now.

Quota periods are UTC calendar periods shifted by an offset (the rule of
plans.Quota.Bounds): DAY from 00:00; WEEK from Sunday + offset days; MONTH
from the 1st + offset days (offset <= 27, so the day exists in every
month). No key name holds a time. Civil dates use Howard Hinnant's
days_from_civil / civil_from_days
(http://howardhinnant.github.io/date_algorithms.html).

A period anchored to a day or in a time zone other than UTC comes as a
table of bounds the node computed (wire.period_bounds: three periods
around its estimate of Redis time); the script picks the one that holds
its own time, so Redis's clock still decides.

Defines: US, DAY_US, EPS, SLACK_US, mmin, mmax, mfloor, mceil, now, days,
day_of(us), date_string(day), period(day, code, offset), period_in(p, us),
ceil_us(x).
]]

local US = 1000000
local DAY_US = 86400 * US
-- a token counts as present when tokens >= 1 - EPS (float noise in refills)
local EPS = 1e-9
-- state keys outlive the moment they stop mattering by this much
local SLACK_US = 1000000
local mmin, mmax, mfloor, mceil = math.min, math.max, math.floor, math.ceil

local now
if ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * US + tonumber(t[2])
end

-- the UTC day (days since 1970-01-01) of a time in µs
local function day_of(us) return mfloor(us / DAY_US) end
local days = day_of(now)

-- ceil with a tolerance of 1 ns for float noise in a µs amount
local function ceil_us(x) return mceil(x - 1e-3) end

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

-- "YYYY-MM-DD" of a day, made once per day a run names (every usage count
-- of a run names the same day or two)
local date_strings = {}
local function date_string(day)
  local s = date_strings[day]
  if not s then
    local y, m, d = civil_from_days(day)
    s = string.format('%04d-%02d-%02d', y, m, d)
    date_strings[day] = s
  end
  return s
end

-- [start, end) in Unix s of the quota period (wire.PERIOD_*) holding day
local function period(day, code, offset)
  if code == wire.PERIOD_WEEK then
    local back = ((day + 4) % 7 - offset) % 7 -- 1970-01-01 was a Thursday (4)
    local first = day - back
    return first * 86400, (first + 7) * 86400
  elseif code == wire.PERIOD_MONTH then
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

-- [start, end) in Unix s of the period of table p (wire.period_bounds)
-- that holds the time us; nil when none does
local function period_in(p, us)
  local s = mfloor(us / US)
  if s < p.from_s or s >= p.to_s then return nil end
  if s < p.start_s then return p.from_s, p.start_s end
  if s < p.end_s then return p.start_s, p.end_s end
  return p.end_s, p.to_s
end
