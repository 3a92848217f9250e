-- energy_data: makes an hourly building-energy CSV from a seed, the same bytes
-- for the same seed on every machine, with one injected anomaly event whose
-- start and end are kept in a sidecar JSON file for checking.
--
--   local data = require "energy_data"
--   local csv, truth = data.generate{seed = 7, days = 90, dir = "runs/x/input"}
--   -- csv:   dir/building_energy.csv        timestamp, energy_kwh, outdoor_temp_c
--   -- truth: dir/building_energy.truth.json {kind, start, end, magnitude_kwh, description}
--   data.generate{kind = "surge", seed = 5, dir = "eval_data", name = "surge-5"}
--   -- dir/surge-5.csv and dir/surge-5.truth.json (the sidecar is always NAME.truth.json)
--   data.KINDS   the anomaly kinds it knows: night_hvac, surge, chiller_fault
--
-- The building: a base load, weekday office hours, lighter weekends, heating
-- below 12 C and cooling above 21 C, weather that drifts from day to day, and
-- noise. The anomaly is one of: HVAC left running at night for several days,
-- a half-day surge, or a chiller fault that raises the cooling load.
local json = require "luagent.json"
local fs = require "luagent.fs"
local dates = require "luagent.dates"

local data = {}

-- splitmix64: a small generator whose output depends only on the seed
local function generator(seed)
  local state = seed
  local function next_u64()
    state = state + 0x9E3779B97F4A7C15
    local z = state
    z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * 0x94D049BB133111EB
    return z ~ (z >> 31)
  end
  local rng = {}
  function rng.uniform() return (next_u64() >> 11) / 9007199254740992.0 end
  function rng.normal()
    local u1, u2 = rng.uniform(), rng.uniform()
    return math.sqrt(-2 * math.log(1 - u1)) * math.cos(2 * math.pi * u2)
  end
  function rng.int(lo, hi) return lo + math.floor(rng.uniform() * (hi - lo + 1)) end
  return rng
end

local function stamp(epoch) return os.date("!%Y-%m-%d %H:%M", epoch) end

local ANOMALIES = {"night_hvac", "surge", "chiller_fault"}
data.KINDS = ANOMALIES

-- Extra kWh the anomaly adds at hour h (0-based) of the series, or 0.
local function anomaly_profile(kind, first, last, magnitude)
  return function(h, hour_of_day, temp)
    if h < first or h > last then return 0 end
    if kind == "night_hvac" then
      return (hour_of_day >= 19 or hour_of_day < 6) and magnitude or 0
    elseif kind == "surge" then
      return magnitude
    else -- chiller_fault: cooling takes much more energy than it should
      return magnitude * (0.6 + 0.4 * math.max(0, temp - 12) / 10)
    end
  end
end

function data.generate(opts)
  local seed, days = opts.seed or 7, opts.days or 90
  local dir = assert(opts.dir, "energy_data.generate: dir is required")
  assert(fs.mkdir(dir))
  local rng = generator(seed)
  local start = dates.days_from_civil(2024, 3, 4) * 86400 -- a Monday
  local hours = days * 24
  local kind = opts.kind or ANOMALIES[rng.int(1, #ANOMALIES)]
  local length = kind == "surge" and rng.int(8, 14) or rng.int(60, 100)
  local first = rng.int(20 * 24, (days - 12) * 24)
  first = first - first % 24 + (kind == "surge" and rng.int(7, 12) or (kind == "night_hvac" and 19 or 0))
  local last = first + length - 1
  local magnitude = ({night_hvac = 28, surge = 45, chiller_fault = 22})[kind] * (0.9 + 0.2 * rng.uniform())
  local extra = anomaly_profile(kind, first, last, magnitude)

  local rows = {"timestamp,energy_kwh,outdoor_temp_c"}
  local weather = 0
  for h = 0, hours - 1 do
    local t = start + h * 3600
    local hour, weekday = h % 24, (h // 24) % 7 -- 0 = Monday
    weather = 0.97 * weather + rng.normal() * 0.45
    local season = 6 + 14 * h / hours
    local temp = season + 5 * math.cos((hour - 15) / 24 * 2 * math.pi) + weather + rng.normal() * 0.4
    local occupied = weekday < 5 and hour >= 8 and hour < 18
    local load = 42 + (occupied and 38 or 0) + (weekday >= 5 and hour >= 9 and hour < 17 and 7 or 0)
    if weekday < 5 and (hour == 7 or hour == 18) then load = load + 16 end -- ramp up / down
    local hvac = 2.3 * math.max(0, temp - 21) + 1.9 * math.max(0, 12 - temp)
    if not occupied then hvac = hvac * 0.45 end
    local energy = load + hvac + extra(h, hour, temp) + rng.normal() * 2.2
    rows[#rows + 1] = ("%s,%.2f,%.1f"):format(stamp(t), energy, temp)
  end
  local name = opts.name or "building_energy"
  local csv = dir .. "/" .. name .. ".csv"
  assert(fs.write(csv, table.concat(rows, "\n") .. "\n"))
  local truth = {
    kind = kind, start = stamp(start + first * 3600), ["end"] = stamp(start + last * 3600),
    magnitude_kwh = math.floor(magnitude * 10 + 0.5) / 10, seed = seed, days = days,
    description = ({night_hvac = "HVAC left running at night", surge = "a half-day surge in consumption",
                    chiller_fault = "a chiller fault raising the cooling load"})[kind],
  }
  local truth_path = dir .. "/" .. name .. ".truth.json"
  assert(fs.write(truth_path, json.encode(truth, {indent = 2}) .. "\n"))
  return csv, truth_path, truth
end

return data
