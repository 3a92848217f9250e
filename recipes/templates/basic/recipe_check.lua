-- The check of the {{name}} recipe's eval ({{name}}.eval.yaml): `luagent eval`
-- calls it once per run with {dir, output, outputs, settings, status, ...}
-- and takes {passed = true|false, score = 0..1, note = "..."} back.
--
-- The truth is computed here from the run's input: for each column, its type
-- (number when every present value is one), its missing cells and, for
-- numbers, the mean. The run's output/columns.csv is compared row by row:
--   score  = the share of the input's columns the run got right
--   passed = every column right, and output/summary.md saved
local fs = require "luagent.fs"

-- One CSV line -> its cells ("quoted, with commas" and "" inside quotes).
local function cells(line)
  local out, i = {}, 1
  repeat
    local cell
    if line:sub(i, i) == '"' then
      local j, parts = i + 1, {}
      while true do
        local q = line:find('"', j, true) or #line + 1
        parts[#parts + 1] = line:sub(j, q - 1)
        if line:sub(q + 1, q + 1) ~= '"' then i = q + 1 break end
        parts[#parts + 1], j = '"', q + 2
      end
      cell = table.concat(parts)
    else
      local comma = line:find(",", i, true) or #line + 1
      cell, i = line:sub(i, comma - 1), comma
    end
    out[#out + 1] = cell
    i = i + 1
  until i > #line + 1
  return out
end

-- A CSV file -> a list of rows, each a map header -> cell; nil when unreadable.
local function read_csv(path)
  local text = path and fs.read(path)
  if not text then return nil end
  local header, rows = nil, {}
  for line in text:gmatch("[^\r\n]+") do
    local row = cells(line)
    if not header then
      header = row
    else
      local map = {}
      for k, name in ipairs(header) do map[name] = row[k] or "" end
      rows[#rows + 1] = map
    end
  end
  return rows, header or {}
end

-- The truth for each column of the input: {column, type, missing, mean}.
local function profile(rows, header)
  local truth = {}
  for _, column in ipairs(header) do
    local missing, sum, n, numeric = 0, 0, 0, true
    for _, row in ipairs(rows) do
      local v = row[column]:match("^%s*(.-)%s*$")
      if v == "" then
        missing = missing + 1
      elseif tonumber(v) then
        sum, n = sum + tonumber(v), n + 1
      else
        numeric = false
      end
    end
    numeric = numeric and n > 0
    truth[#truth + 1] = {column = column, type = numeric and "number" or "text", missing = missing,
                         mean = numeric and sum / n or nil}
  end
  return truth
end

-- Is the run's row right about this column? true, or false and why not.
local function right(want, got)
  if not got then return false, "not in columns.csv" end
  if got.type ~= want.type then return false, ("type %s, not %s"):format(got.type, want.type) end
  if tonumber(got.missing) ~= want.missing then
    return false, ("missing %s, not %d"):format(got.missing, want.missing)
  end
  local mean, tolerance = tonumber(got.mean), want.mean and 0.005 * math.max(1, math.abs(want.mean))
  if want.mean and not (mean and math.abs(mean - want.mean) <= tolerance) then
    return false, ("mean %s, not %.3f"):format(got.mean, want.mean)
  end
  return true
end

return function(run)
  local input = assert(run.settings.input, "the run has no input setting: give each input as `input: FILE`")
  local rows, header = read_csv(input)
  if not rows then error("cannot read the run's input " .. input, 0) end
  local saved = run.outputs["output/columns.csv"]
  local got_rows = read_csv(saved and saved.path)
  if not got_rows then return {passed = false, score = 0, note = "no output/columns.csv"} end
  local got = {}
  for _, row in ipairs(got_rows) do got[row.column or ""] = row end

  local truth, good, wrong = profile(rows, header), 0, {}
  for _, want in ipairs(truth) do
    local ok, why = right(want, got[want.column])
    if ok then good = good + 1 else wrong[#wrong + 1] = want.column .. ": " .. why end
  end
  local summary = run.outputs["output/summary.md"] ~= nil
  local note = ("%d of %d columns right"):format(good, #truth)
    .. (#wrong > 0 and ("; " .. table.concat(wrong, "; ")) or "")
    .. (summary and "" or "; no output/summary.md")
  return {passed = good == #truth and summary, score = #truth > 0 and good / #truth or 0, note = note}
end
