-- luagent.checks: one-line checks for an eval's check file, on the path a
-- run took as well as on what it made, and ways to put them together.
--
--   local checks = require "luagent.checks"
--   return function(run)
--     return checks.all{
--       checks.used_tool(run, "run_python"),
--       checks.max_turns(run, 10),
--       checks.csv_columns(run, "anomalies.csv", {"timestamp", "energy_kwh"}),
--       checks.output_text(run, "report.md", "kWh"),
--     }
--   end
--
-- Every helper takes the run a check gets and returns a verdict {passed,
-- score, note} (the note says what was found, passing or not):
--   the path (luagent.checks.trajectory, from the run's trace): used_tool,
--     not_used_tool, tool_order, max_turns, max_commands, no_failed_command, max_cost
--   what it made (luagent.checks.files): output_text, output_matches, csv_columns,
--     output_json, answer_schema
--   a model's judgement (luagent.checks.graded): graded(run, {rubric, model, ...})
-- Bad input in the run or the spec (a path outside the outputs, a malformed
-- schema or pattern, an unreadable trace) fails that check saying why; a
-- helper called wrongly (no run, a name that is not text) raises.
--
-- Putting verdicts together (an item may also be a function returning one,
-- called only when needed: all stops at the first failure, any at the first
-- pass — so a model-graded check costs nothing when a cheap one settles it):
--   all{...}      passed when every item passed; score the mean; note the failures' notes
--   any{...}      passed when one did; score the best; note the passing one's
--   weighted{{v, w}, ..., pass = x}   score the weighted mean; passed when it is >= x
--                 (without pass: when every item passed)
-- A verdict that is not {passed = true|false} counts as a failure naming it.
local verdict = require "luagent.checks.verdict"
local trajectory = require "luagent.checks.trajectory"
local files = require "luagent.checks.files"
local graded = require "luagent.checks.graded"
local options = require "luagent.options"

local checks = {}

checks.used_tool, checks.not_used_tool, checks.tool_order = trajectory.used_tool, trajectory.not_used_tool,
  trajectory.tool_order
checks.max_turns, checks.max_commands, checks.max_cost = trajectory.max_turns, trajectory.max_commands,
  trajectory.max_cost
checks.no_failed_command = trajectory.no_failed_command
checks.output_text, checks.output_matches, checks.csv_columns = files.output_text, files.output_matches,
  files.csv_columns
checks.output_json, checks.answer_schema = files.output_json, files.answer_schema
checks.graded = graded.graded
checks.pass, checks.fail = verdict.pass, verdict.fail

-- Item i of a composition as a verdict (a function is called now).
local function item(name, i, v)
  if type(v) == "function" then
    local ok, got = pcall(v)
    if not ok then
      if type(got) == "table" and got.kind == "cancelled" then error(got, 0) end
      return verdict.fail(("item %d raised: %s"):format(i, type(got) == "table" and tostring(got.message) or tostring(got)))
    end
    v = got
  end
  if type(v) ~= "table" or type(v.passed) ~= "boolean" then
    return verdict.fail(("checks.%s: item %d is %s, not a verdict {passed, score, note}"):format(name, i,
      type(v) == "table" and "a table without passed = true|false" or tostring(v)))
  end
  local score = v.score
  if type(score) ~= "number" or score ~= score then score = v.passed and 1 or 0 end
  return {passed = v.passed, score = math.max(0, math.min(1, score)), note = v.note}
end

-- level: where the error points (the caller of checks.NAME)
local function items(name, list, level)
  if type(list) ~= "table" or #list == 0 then
    local example = name == "weighted" and "{{checks.used_tool(run, \"run_python\"), 2}, ...}"
      or "{checks.used_tool(run, \"run_python\"), ...}"
    error(("checks.%s{...}: give a list of verdicts, e.g. checks.%s%s"):format(name, name, example), level)
  end
  return list
end

local function notes(list, want)
  local out = {}
  for _, v in ipairs(list) do
    if (want == nil or v.passed == want) and v.note and v.note ~= "" then out[#out + 1] = tostring(v.note) end
  end
  return table.concat(out, "; ")
end

-- The items as verdicts, in order, until stop(verdict, next item) says to.
local function walk(name, list, stop)
  items(name, list, 4)
  local done, sum, best = {}, 0, 0
  for i = 1, #list do
    local v = item(name, i, list[i])
    done[i], sum, best = v, sum + v.score, math.max(best, v.score)
    if stop(v, list[i + 1]) then break end
  end
  return done, sum, best
end

function checks.all(list)
  -- a function item after a failure is not called: it counts as failed, score 0
  local done, sum = walk("all", list, function(v, after) return not v.passed and type(after) == "function" end)
  local failed = #done < #list
  for _, v in ipairs(done) do failed = failed or not v.passed end
  return {passed = not failed, score = sum / #list, note = failed and notes(done, false) or notes(done)}
end

function checks.any(list)
  local done, _, best = walk("any", list, function(v) return v.passed end)
  local last = done[#done]
  if last.passed then return {passed = true, score = best, note = last.note} end
  return {passed = false, score = best, note = "none passed: " .. notes(done)}
end

function checks.weighted(list)
  items("weighted", list, 3)
  options.check(list, "luagent.WeightedItems", "checks.weighted") -- pass, and no typo of it
  local threshold = list.pass
  if threshold ~= nil and (type(threshold) ~= "number" or threshold < 0 or threshold > 1) then
    error("checks.weighted{..., pass = x}: pass must be a number from 0 to 1", 2)
  end
  local sum, total, all_passed, done = 0, 0, true, {}
  for i, pair in ipairs(list) do
    local weight = type(pair) == "table" and pair[2]
    if type(weight) ~= "number" or weight < 0 then
      error(("checks.weighted{{verdict, weight}, ...}: item %d needs a weight >= 0, e.g. {checks.max_turns(run, 5), 2}")
        :format(i), 2)
    end
    local v = item("weighted", i, pair[1])
    done[#done + 1] = v
    sum, total = sum + weight * v.score, total + weight
    all_passed = all_passed and v.passed
  end
  local score = total > 0 and sum / total or 0
  local passed = threshold == nil and all_passed or (threshold ~= nil and score >= threshold)
  return {passed = passed, score = score,
          note = ("score %.2f%s: %s"):format(score, threshold and (" (pass at %.2f)"):format(threshold) or "",
            notes(done))}
end

return checks
