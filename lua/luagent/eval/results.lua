-- luagent.eval.results: what an eval writes as it goes, and its summary.
--
--   results.line(job, outcome) -> the results.jsonl record of one run
--   results.append(path, record) -> true | nil, err   one JSON line, written at once
--   results.write_final(dir, final) -> true | nil, err   run_dir/final.json
--   results.summarize(variants, records) -> rows, one per variant (in the spec's order):
--     {variant, runs, done, passed, skipped, interrupted, waiting, errors, pass_rate, mean_score,
--      mean_turns, mean_tokens, mean_cost, mean_wall_s, total_tokens, total_cost, saved_cost,
--      cached_calls, live_calls, graded, grading_cost}   (means over the runs that finished:
--      nil when none; graded: how many a model judged, grading_cost what that cost; waiting:
--      runs that wait for a person's approval, neither done nor in the pass rate)
--   results.write_summary(path, rows) -> true | nil, err   summary.csv, atomically
--
-- A record: {variant, input, epoch, status ("ok" | "failed" | "interrupted" | "skipped" | "waiting"),
-- passed, score, note, stopped_by, turns, usage = {input_tokens, output_tokens}, cost,
-- saved_cost, wall_s, cached_calls, live_calls, run_dir (relative to the eval's folder),
-- error, skipped (false, or why the run did not start), graded (a model judged it:
-- luagent.checks.graded), grading_cost (what that cost; not in cost), waiting (a run that stopped for a
-- person's approval, agent.new{approve = "defer"}: what it waits for, {run_id, agent, turn, call = {id,
-- tool, arguments}}; its passed and error are null: it has not ended)}; a value not known is JSON null,
-- so every line has every field.
local json = require "luagent.json"
local fs = require "luagent.fs"
local errors = require "luagent.errors"

local results = {}

local FIELDS = {"variant", "input", "epoch", "status", "passed", "score", "note", "stopped_by", "turns", "usage",
                "cost", "saved_cost", "wall_s", "cached_calls", "live_calls", "run_dir", "error", "skipped", "graded",
                "grading_cost", "waiting"}
results.FIELDS = FIELDS

local function null_if_nil(v) if v == nil then return json.null end return v end

function results.line(job, o)
  local record = {
    variant = job.variant, input = job.input, epoch = job.epoch, status = o.status, passed = o.passed,
    score = o.score, note = o.note, stopped_by = o.stopped_by, turns = o.turns, usage = o.usage, cost = o.cost,
    saved_cost = o.saved_cost, wall_s = o.wall_s and math.floor(o.wall_s * 1000 + 0.5) / 1000,
    cached_calls = o.cached_calls, live_calls = o.live_calls, run_dir = job.run_dir, error = o.error,
    skipped = o.skipped or false, graded = o.graded or false, grading_cost = o.grading_cost, waiting = o.waiting,
  }
  for _, f in ipairs(FIELDS) do record[f] = null_if_nil(record[f]) end
  return record
end

function results.append(path, record)
  local ok, err = fs.append(path, json.encode(record) .. "\n")
  if not ok then return nil, errors.wrap(err, "writing " .. path) end
  return true
end

function results.write_final(dir, final)
  final = final or {}
  local record = {output = final.output, stopped_by = final.stopped_by, turns = final.turns, usage = final.usage,
                  cost = final.cost}
  for _, k in ipairs({"output", "stopped_by", "turns", "usage", "cost"}) do record[k] = null_if_nil(record[k]) end
  local path = dir .. "/final.json"
  local ok, err = fs.write(path, json.encode(record, {indent = 2}) .. "\n")
  if not ok then return nil, errors.wrap(err, "writing " .. path) end
  return true
end

local function value(v) if v == json.null then return nil end return v end

local function tokens_of(record)
  local usage = value(record.usage)
  if type(usage) ~= "table" then return nil end
  return (value(usage.input_tokens) or 0) + (value(usage.output_tokens) or 0)
end
results.tokens_of = tokens_of

-- Adds v to sums[key] and counts it, when v is a number.
local function add(acc, key, v)
  if type(v) ~= "number" then return end
  acc[key] = (acc[key] or 0) + v
  acc[key .. "_n"] = (acc[key .. "_n"] or 0) + 1
end

local function mean(acc, key)
  local n = acc[key .. "_n"]
  return n and n > 0 and acc[key] / n or nil
end

-- One row per variant (in the order of `variants`, or of first appearance
-- when it is nil): runs, done, passed, checked (runs the check judged),
-- skipped, interrupted, waiting, errors, pass_rate (of the checked), mean_*
-- and totals. The terminal table, summary.csv and the eval page all use it.
function results.summarize(variants, records)
  local rows, by_name = {}, {}
  local function row_for(name)
    if not by_name[name] then
      rows[#rows + 1] = {variant = name, runs = 0, done = 0, passed = 0, checked = 0, skipped = 0, interrupted = 0,
                         waiting = 0, errors = 0, graded = 0}
      by_name[name] = {row = rows[#rows], acc = {}}
    end
    return by_name[name]
  end
  for _, v in ipairs(variants or {}) do row_for(v.name) end
  for _, r in ipairs(records) do
    local entry = (variants == nil or by_name[r.variant]) and row_for(tostring(r.variant or "?"))
    if entry then
      local row, acc = entry.row, entry.acc
      row.runs = row.runs + 1
      if r.status == "skipped" or (value(r.skipped) and r.skipped ~= false) then
        row.skipped = row.skipped + 1
      elseif r.status == "interrupted" then
        row.interrupted = row.interrupted + 1
      elseif r.status == "waiting" then
        row.waiting = row.waiting + 1
      else
        row.done = row.done + 1
        if type(r.passed) == "boolean" then row.checked = row.checked + 1 end
        if r.passed == true then row.passed = row.passed + 1 end
        if value(r.error) then row.errors = row.errors + 1 end
        add(acc, "score", value(r.score))
        add(acc, "turns", value(r.turns))
        add(acc, "tokens", tokens_of(r))
        add(acc, "cost", value(r.cost))
        add(acc, "wall_s", value(r.wall_s))
        add(acc, "saved_cost", value(r.saved_cost))
        add(acc, "cached_calls", value(r.cached_calls))
        add(acc, "live_calls", value(r.live_calls))
        add(acc, "grading_cost", value(r.grading_cost))
        if r.graded == true then row.graded = row.graded + 1 end
      end
    end
  end
  for _, entry in pairs(by_name) do
    local row, acc = entry.row, entry.acc
    row.pass_rate = row.checked > 0 and row.passed / row.checked or nil
    row.mean_score, row.mean_turns, row.mean_tokens = mean(acc, "score"), mean(acc, "turns"), mean(acc, "tokens")
    row.mean_cost, row.mean_wall_s = mean(acc, "cost"), mean(acc, "wall_s")
    row.total_tokens, row.total_cost, row.saved_cost = acc.tokens, acc.cost, acc.saved_cost
    row.cached_calls, row.live_calls, row.grading_cost = acc.cached_calls, acc.live_calls, acc.grading_cost
  end
  return rows
end

local CSV_COLUMNS = {"variant", "runs", "done", "passed", "skipped", "interrupted", "errors", "pass_rate", "mean_score",
                     "mean_turns", "mean_tokens", "mean_cost", "mean_wall_s", "total_tokens", "total_cost", "saved_cost",
                     "cached_calls", "live_calls", "graded", "grading_cost", "waiting"}

local function csv_cell(v)
  if v == nil then return "" end
  if math.type(v) == "float" then return (("%.6f"):format(v):gsub("0+$", ""):gsub("%.$", "")) end
  local s = tostring(v)
  if s:find('[",\n]') then s = '"' .. s:gsub('"', '""') .. '"' end
  return s
end

function results.write_summary(path, rows)
  local lines = {table.concat(CSV_COLUMNS, ",")}
  for _, row in ipairs(rows) do
    local cells = {}
    for i, c in ipairs(CSV_COLUMNS) do cells[i] = csv_cell(row[c]) end
    lines[#lines + 1] = table.concat(cells, ",")
  end
  local ok, err = fs.write(path, table.concat(lines, "\n") .. "\n")
  if not ok then return nil, errors.wrap(err, "writing " .. path) end
  return true
end

return results
