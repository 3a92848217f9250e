-- The check of the energy recipe's eval (energy_anomaly.eval.yaml): called once
-- per run by `luagent eval` with {dir, output, outputs, settings, ...}.
--
-- The truth: the generator's sidecar beside the input (data.csv ->
-- data.truth.json: kind, start, end). The found window: from
-- output/anomalies.csv, the rows of event 1 when it has an event_id column
-- (events ranked by size), else all its rows; first to last hour.
--   score  = the overlap of the two windows, hour by hour: intersection / union (IoU)
--   passed = IoU >= 0.5 and output/report.md names the truth's start and end dates
local json = require "luagent.json"
local fs = require "luagent.fs"
local dates = require "luagent.dates"

local PASS_IOU = 0.5

-- "2024-04-08 19:00[:00]" -> hours since the epoch
local function hour_of(text)
  local y, m, d, h = tostring(text):match("^%s*\"?(%d%d%d%d)-(%d%d)-(%d%d)[T ](%d%d)")
  if not y then return nil end
  return dates.days_from_civil(tonumber(y), tonumber(m), tonumber(d)) * 24 + tonumber(h)
end

local function split(line)
  local cells = {}
  for cell in (line .. ","):gmatch("([^,]*),") do cells[#cells + 1] = cell:gsub('^"(.*)"$', "%1") end
  return cells
end

-- The first and last hour of the found event in anomalies.csv, or nil, why.
local function found_window(path)
  local text = path and fs.read(path)
  if not text then return nil, "no output/anomalies.csv" end
  local lines = {}
  for line in text:gmatch("[^\r\n]+") do lines[#lines + 1] = line end
  local header = split(lines[1] or "")
  local col = {}
  for i, name in ipairs(header) do col[name] = i end
  if not col.timestamp then return nil, "anomalies.csv has no timestamp column" end
  local first, last, event = nil, nil, nil
  for i = 2, #lines do
    local cells = split(lines[i])
    local id = col.event_id and tonumber(cells[col.event_id])
    if id and (event == nil or id < event) then event, first, last = id, nil, nil end
    if not col.event_id or id == event then
      local h = hour_of(cells[col.timestamp])
      if h then
        first = first and math.min(first, h) or h
        last = last and math.max(last, h) or h
      end
    end
  end
  if not first then return nil, "anomalies.csv lists no anomalous hour" end
  return first, last
end

local function stamp(hour) return os.date("!%Y-%m-%d %H:00", hour * 3600) end

return function(run)
  local input = assert(run.settings.input, "the run has no input setting: the eval gives each run its dataset as `input`")
  local truth_path = input:gsub("%.csv$", "") .. ".truth.json"
  local truth = json.decode(assert(fs.read(truth_path)))
  local t0, t1 = assert(hour_of(truth.start)), assert(hour_of(truth["end"]))

  local anomalies = run.outputs["output/anomalies.csv"]
  local f0, f1 = found_window(anomalies and anomalies.path)
  if not f0 then return {passed = false, score = 0, note = f1} end
  local inter = math.max(0, math.min(f1, t1) - math.max(f0, t0) + 1)
  local union = math.max(f1, t1) - math.min(f0, t0) + 1
  local iou = inter / union

  local report = run.outputs["output/report.md"]
  local text = report and fs.read(report.path) or ""
  local names_dates = text:find(truth.start:sub(1, 10), 1, true) and text:find(truth["end"]:sub(1, 10), 1, true)
  local note = ("IoU %.2f: found %s .. %s, truth %s .. %s (%s)%s"):format(iou, stamp(f0), stamp(f1), truth.start,
    truth["end"], truth.kind, names_dates and "" or "; report.md does not name the dates")
  return {passed = iou >= PASS_IOU and names_dates ~= nil, score = iou, note = note}
end
