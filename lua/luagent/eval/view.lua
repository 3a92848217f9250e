-- luagent.eval.view: what an eval prints for people.
--
--   view.progress(n, total, record [, at_once]) -> "[ 3/12] terse / night_hvac-11 #1: passed, score 0.82, ..."
--     (at_once: concurrency auto's current width, shown at the end: "[4 at a time]")
--   view.table(rows) -> text    one line per variant: runs, pass rate, mean score, turns,
--     tokens, $, wall (means per finished run); `*` marks the best of each column
--     (highest pass rate and score, fewest turns, tokens, dollars and seconds) when
--     variants differ in it as shown; `~` marks pass and score when a model judged
--     runs (luagent.checks.graded), with a line saying how many and what that cost.
--   view.waiting(records, {dir, resume, decided}) -> text | nil   the runs that wait for a person's
--     approval (status "waiting"), each with what it waits for and its `luagent approve` command
--     (dir: the eval's folder as shown; resume: the command that goes on; decided(record) -> the
--     decision already recorded, or nil); nil when none waits
local json = require "luagent.json"

local view = {}

local function value(v) if v == json.null then return nil end return v end

local function tokens(n)
  if n == nil then return "-" end
  if n >= 10000 then return ("%.1fk"):format(n / 1000) end
  return ("%d"):format(math.floor(n + 0.5))
end

local function dollars(x)
  if x == nil then return "-" end
  return ("$%.4f"):format(x)
end

-- What a waiting run waits for: "write_note (call call_1, turn 1 of agent)".
function view.waits_for(w)
  w = type(value(w)) == "table" and w or {}
  local call = type(value(w.call)) == "table" and w.call or {}
  return ("%s (call %s, turn %s of %s)"):format(tostring(value(call.tool) or "?"), tostring(value(call.id) or "?"),
    tostring(value(w.turn) or "?"), tostring(value(w.agent) or "the agent"))
end

function view.progress(n, total, r, at_once)
  local width = #tostring(total)
  local parts = {}
  local verdict
  if r.status == "interrupted" then verdict = "interrupted"
  elseif r.status == "waiting" then verdict = "waiting for approval of " .. view.waits_for(r.waiting)
  elseif r.passed == true then verdict = "passed"
  else verdict = "FAILED" end
  parts[#parts + 1] = verdict
  if value(r.score) then parts[#parts + 1] = ("score %.2f"):format(r.score) end
  if value(r.turns) then parts[#parts + 1] = ("%d turns"):format(r.turns) end
  local usage = value(r.usage)
  if type(usage) == "table" then
    parts[#parts + 1] = tokens((value(usage.input_tokens) or 0) + (value(usage.output_tokens) or 0)) .. " tokens"
  end
  if value(r.cost) then parts[#parts + 1] = dollars(r.cost) end
  if value(r.wall_s) then parts[#parts + 1] = ("%.1fs"):format(r.wall_s) end
  if value(r.cached_calls) or value(r.live_calls) then
    parts[#parts + 1] = ("%d cached + %d live calls"):format(value(r.cached_calls) or 0, value(r.live_calls) or 0)
  end
  local line = ("[%" .. width .. "d/%d] %s / %s #%d: %s"):format(n, total, r.variant, r.input, r.epoch,
    table.concat(parts, ", "))
  local why = value(r.error) or value(r.note)
  if why then line = line .. "  (" .. tostring(why):gsub("\n.*", "") .. ")" end
  if at_once then line = line .. ("  [%d at a time]"):format(at_once) end
  return line
end

-- The columns: header, the row's value, how to show it, and which end is best.
local COLUMNS = {
  {"pass", "pass_rate", function(v) return ("%d%%"):format(math.floor(v * 100 + 0.5)) end, "high"},
  {"score", "mean_score", function(v) return ("%.2f"):format(v) end, "high"},
  {"turns", "mean_turns", function(v) return ("%.1f"):format(v) end, "low"},
  {"tokens", "mean_tokens", tokens, "low"},
  {"$", "mean_cost", dollars, "low"},
  {"wall", "mean_wall_s", function(v) return ("%.1fs"):format(v) end, "low"},
}

-- The best value of a column as shown, or nil when fewer than two variants
-- have one or they all show the same (nothing to choose).
local function best_of(rows, column)
  local key, show, direction = column[2], column[3], column[4]
  local best, count, differ, first = nil, 0, false, nil
  for _, row in ipairs(rows) do
    local v = row[key]
    if v ~= nil then
      count = count + 1
      if first == nil then first = show(v) elseif show(v) ~= first then differ = true end
      if best == nil or (direction == "high" and v > best) or (direction == "low" and v < best) then best = v end
    end
  end
  if count < 2 or not differ then return nil end
  return show(best)
end

local function pad(s, width, left)
  local fill = (" "):rep(math.max(0, width - #s))
  return left and (s .. fill) or (fill .. s)
end

-- "~ ..." when a model judged runs, or nil.
local function graded_line(rows)
  local graded, done, cost = 0, 0, nil
  for _, row in ipairs(rows) do
    graded, done = graded + (row.graded or 0), done + (row.done or 0)
    if row.grading_cost then cost = (cost or 0) + row.grading_cost end
  end
  if graded == 0 then return nil end
  return ("~ model-graded: a model judged %d of %d runs (grading %s, not in the $ column)"):format(graded, done,
    cost and dollars(cost) or "cost unknown")
end

function view.table(rows)
  local graded = graded_line(rows)
  local header = {"variant", "runs"}
  for _, c in ipairs(COLUMNS) do
    header[#header + 1] = (graded and (c[2] == "pass_rate" or c[2] == "mean_score")) and (c[1] .. "~") or c[1]
  end
  local lines = {header}
  local marked = false
  local best = {}
  for i, c in ipairs(COLUMNS) do best[i] = best_of(rows, c) end
  for _, row in ipairs(rows) do
    local runs = tostring(row.done)
    if row.done ~= row.runs then runs = ("%d/%d"):format(row.done, row.runs) end
    local cells = {row.variant, runs}
    for i, c in ipairs(COLUMNS) do
      local v = row[c[2]]
      local text = v == nil and "-" or c[3](v)
      if v ~= nil and best[i] ~= nil and text == best[i] then
        text = text .. "*"
        marked = true
      else
        text = text .. " "
      end
      cells[#cells + 1] = text
    end
    lines[#lines + 1] = cells
  end
  local widths = {}
  for _, cells in ipairs(lines) do
    for i, cell in ipairs(cells) do widths[i] = math.max(widths[i] or 0, #cell) end
  end
  local out = {}
  for n, cells in ipairs(lines) do
    local text = {}
    for i, cell in ipairs(cells) do
      if n == 1 and i > 2 then cell = cell .. " " end -- headers line up with the values, not the marks
      text[i] = pad(cell, widths[i], i == 1)
    end
    out[#out + 1] = table.concat(text, "  "):gsub("%s+$", "")
  end
  if marked then out[#out + 1] = "* best in its column" end
  if graded then out[#out + 1] = graded end
  return table.concat(out, "\n") .. "\n"
end

function view.waiting(records, opts)
  local lines, undecided = {}, 0
  for _, r in ipairs(records) do
    if r.status == "waiting" then
      local head = ("  %s / %s #%s: %s: "):format(tostring(r.variant), tostring(r.input), tostring(r.epoch),
        view.waits_for(r.waiting))
      local decided = opts.decided and opts.decided(r)
      if decided then
        lines[#lines + 1] = head .. ("%s; %s goes on with it"):format(decided, opts.resume)
      else
        undecided = undecided + 1
        lines[#lines + 1] = head .. "luagent approve " .. opts.dir .. "/" .. tostring(value(r.run_dir) or "?")
      end
    end
  end
  if #lines == 0 then return nil end
  table.insert(lines, 1, ("%d run%s for an approval (not counted in the pass rates):"):format(#lines,
    #lines == 1 and " waits" or "s wait"))
  if undecided > 0 then lines[#lines + 1] = "approve each (or --deny CALL --why TEXT), then: " .. opts.resume end
  return table.concat(lines, "\n") .. "\n"
end

return view
