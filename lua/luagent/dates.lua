-- luagent.dates: calendar arithmetic without the local time zone.
-- (days_from_civil; parse for HTTP dates and RFC 3339: lua/meta/dates.lua)
local dates = {}

-- Days since 1970-01-01 of a civil date (proleptic Gregorian calendar).
function dates.days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local doy = (153 * (m + (m > 2 and -3 or 9)) + 2) // 5 + d - 1
  return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
end

local MONTHS = {Jan = 1, Feb = 2, Mar = 3, Apr = 4, May = 5, Jun = 6, Jul = 7, Aug = 8, Sep = 9, Oct = 10, Nov = 11,
                Dec = 12}

-- Seconds since the epoch of an HTTP date or an RFC 3339 time, or nil.
function dates.parse(text)
  if type(text) ~= "string" then return nil end
  local d, mon, y, hh, mm, ss = text:match("^%a+, (%d+) (%a+) (%d+) (%d+):(%d+):(%d+) GMT$")
  if d and MONTHS[mon] then
    return dates.days_from_civil(tonumber(y), MONTHS[mon], tonumber(d)) * 86400 + hh * 3600 + mm * 60 + ss
  end
  local Y, M, D, h, mi, s, frac, zone = text:match("^(%d+)-(%d+)-(%d+)[T ](%d+):(%d+):(%d+)(%.?%d*)(.*)$")
  if not Y then return nil end
  local t = dates.days_from_civil(tonumber(Y), tonumber(M), tonumber(D)) * 86400 + h * 3600 + mi * 60 + s
  t = t + (tonumber("0" .. frac) or 0)
  local sign, zh, zm = zone:match("^([+-])(%d%d):?(%d%d)$")
  if sign then t = t - (sign == "+" and 1 or -1) * (zh * 3600 + zm * 60) end
  return t
end

return dates
