--[[
tollgate limiter: time and calendar, prepended (by the Go side) to
limiter.lua and quota.lua, whose ARGV[1] is the clock argument.

now   the time of the run in Unix microseconds: ARGV[1] when it is not ""
      (test builds only), else Redis TIME, never a node clock.
period(days, kind, offset) -> start, end (Unix seconds) of the UTC calendar
      quota period containing day `days` (days since 1970-01-01): DAY from
      00:00; WEEK from Sunday + offset days; MONTH from the 1st + offset
      days (offset <= 27, so the day exists in every month), the same rule
      as plans.Quota.Bounds.
date_string(days) -> "YYYY-MM-DD".
Civil dates use Howard Hinnant's days_from_civil / civil_from_days
(http://howardhinnant.github.io/date_algorithms.html).
]]

local US = 1000000

local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * US + tonumber(t[2])
end

-- Howard Hinnant's civil calendar algorithms (proleptic Gregorian, days
-- since 1970-01-01); math.floor makes the divisions floor divisions.
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m > 2) and (m - 3) or (m + 9)
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = (mp < 10) and (mp + 3) or (mp - 9)
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local function date_string(days)
  local y, m, d = civil_from_days(days)
  return string.format('%04d-%02d-%02d', y, m, d)
end

-- [start, end) in Unix seconds of the quota period containing day `days`
local function period(days, kind, offset)
  if kind == 'WEEK' then
    local back = ((days + 4) % 7 - offset) % 7 -- 1970-01-01 was a Thursday (4)
    local s = days - back
    return s * 86400, (s + 7) * 86400
  elseif kind == 'MONTH' then
    local y, m = civil_from_days(days)
    local s = days_from_civil(y, m, 1 + offset)
    if s > days then
      if m == 1 then y, m = y - 1, 12 else m = m - 1 end
      s = days_from_civil(y, m, 1 + offset)
    end
    if m == 12 then y, m = y + 1, 1 else m = m + 1 end
    return s * 86400, days_from_civil(y, m, 1 + offset) * 86400
  end
  return days * 86400, (days + 1) * 86400
end

