-- luagent.checks.graded (internal; luagent.checks gives it): a check a model
-- judges, for what code cannot — is the report clear, is the cause plausible.
--
--   graded(run, {rubric, model = {...}, outputs = true | false | {paths}, trajectory = false})
--     -> {passed, score, note}
--
-- The model is asked once, with a structured answer {passed, score, note}: the
-- rubric, the run's final answer, its text outputs (each cut at MAX_FILE
-- characters, all at MAX_OUTPUTS; outputs = {paths} names which, false none)
-- and, with trajectory = true, its tool calls. Which model: opts.model over
-- the eval's grader model (run.grader.model: the spec's grader.model over the
-- recipe's model settings and --set; never a variant's, so every variant is
-- judged by the same model). The rubric: opts.rubric, else the spec's
-- grader.rubric.
--
-- The call is one of a run of its own, in the run's folder under grading/
-- (its trace.jsonl shows the request and the answer), with the eval's cache
-- mode (run.grader.cache) in the cache folder the eval's runs use: a rerun of
-- the same answer and outputs asks nothing. What it cost is added to
-- run.grading = {asked, live_calls, cached_calls, cost, tokens, model}, which
-- luagent.eval records apart from the run's own cost (grading_cost) and marks
-- the run as model-graded. A run that failed is not graded (nothing asked).
-- Everything that goes wrong (no model, a refused request, an answer that
-- is not a grade) fails the check saying so; a missing rubric raises.
local json = require "luagent.json"
local fs = require "luagent.fs"
local sched = require "luagent.sched"
local errors = require "luagent.errors"
local config = require "luagent.config"
local model = require "luagent.model"
local recipe_run = require "luagent.run"
local excerpt = require("luagent.text").excerpt
local compare = require "luagent.trace_page.compare"
local verdict = require "luagent.checks.verdict"
local options = require "luagent.options"
local files = require "luagent.checks.files"
local trajectory = require "luagent.checks.trajectory"

local graded = {}

graded.MAX_FILE = 8000
graded.MAX_OUTPUTS = 40000

local SYSTEM = "You grade one run of an AI agent against a rubric. Judge only what the rubric asks, from what "
  .. "is shown below. Answer with passed (true when the run meets the rubric), score (a number from 0 to 1: how "
  .. "well it meets it) and note (one or two sentences: why)."

graded.SCHEMA = {
  type = "object",
  properties = {passed = {type = "boolean"}, score = {type = "number"}, note = {type = "string"}},
  required = {"passed", "score", "note"}, additionalProperties = false,
}

local function copy(t)
  if type(t) ~= "table" then return t end
  local out = {}
  for k, v in pairs(t) do out[k] = copy(v) end
  return out
end

-- The run's text outputs as prompt sections, within the limits.
local function output_sections(run, which)
  if which == false then return {} end
  local paths = {}
  if type(which) == "table" then paths = which
  else
    for k in pairs(type(run.outputs) == "table" and run.outputs or {}) do paths[#paths + 1] = k end
    table.sort(paths)
  end
  local out, room = {}, graded.MAX_OUTPUTS
  for _, path in ipairs(paths) do
    local file, key = files.resolve(run, path)
    local content = file and fs.read(file)
    if content and not content:find("\0", 1, true) and room > 0 then
      local limit = math.min(graded.MAX_FILE, room)
      local shown = #content > limit and (content:sub(1, limit) .. ("\n[... %d more characters]"):format(#content - limit))
        or content
      room = room - math.min(#content, limit)
      out[#out + 1] = ("--- %s (%d bytes)\n%s"):format(key, #content, shown)
    end
  end
  return out
end

local function tool_lines(run)
  local events = trajectory.events(run) or {}
  local lines = {}
  for _, ev in ipairs(events) do
    if ev.type == "tool_call" and #lines < 50 then
      local args = type(ev.arguments) == "table" and json.encode(ev.arguments) or tostring(ev.arguments)
      lines[#lines + 1] = ("%d. %s %s"):format(#lines + 1, tostring(ev.name), excerpt(args, 300, "flat"))
    end
  end
  return lines
end

local function prompt(run, rubric, opts)
  local parts = {"Rubric:\n" .. rubric, "The run's final answer:\n" .. compare.answer_text(run.output)}
  local sections = output_sections(run, opts.outputs)
  if #sections > 0 then parts[#parts + 1] = "Its output files:\n" .. table.concat(sections, "\n") end
  if opts.trajectory then
    local lines = tool_lines(run)
    parts[#parts + 1] = "Its tool calls, in order:\n" .. (#lines > 0 and table.concat(lines, "\n") or "(none)")
  end
  return table.concat(parts, "\n\n")
end

-- Asks m in a run of its own (the cache, a trace): result | nil, err; and that run's stats.
local function ask(run, m, request, n)
  local recipe = (run.grader or {}).recipe
  local base = recipe and recipe:gsub("%.lua$", "") or (run.dir .. "/run")
  local r, err = recipe_run.new{recipe = base .. "_grader.lua", settings = run.settings,
    dir = run.dir .. "/grading" .. (n > 1 and ("-" .. n) or ""), quiet = true,
    cache = (run.grader or {}).cache or "off"}
  if not r then return nil, err end
  local task = sched.spawn_in(r, function() return m:complete(request) end)
  local ok, result, cerr = pcall(task.wait, task)
  local status = ok and result and "ok" or "failed"
  r:_end(status, not ok and errors.from(result).message or (cerr and errors.from(cerr).message) or nil)
  if not ok then error(result, 0) end -- a cancellation: the eval stops
  return result, cerr, r.stats
end

-- Adds the stats of one grading to run.grading.
local function count(run, stats, m)
  local g = run.grading or {asked = 0, live_calls = 0, cached_calls = 0, cost = 0, tokens = 0}
  run.grading = g
  g.asked = g.asked + 1
  g.model = ("%s/%s"):format(m.provider, m.model)
  if stats then
    g.live_calls, g.cached_calls = g.live_calls + stats.live_calls, g.cached_calls + stats.cached_calls
    g.cost = g.cost + stats.cost
    g.tokens = g.tokens + stats.input_tokens + stats.output_tokens
  end
end

function graded.graded(run, opts)
  verdict.run(run, "graded")
  -- a typo (lua/meta's luagent.GradedOptions, luagent.ModelConfig) is refused, not graded without it
  opts = options.check(opts or {}, "luagent.GradedOptions", "checks.graded")
  options.check(opts.model, "luagent.ModelConfig", "checks.graded: model")
  local grader = type(run.grader) == "table" and run.grader or {}
  local rubric = opts.rubric or grader.rubric
  if type(rubric) ~= "string" or rubric:match("^%s*$") then
    error("checks.graded(run, {rubric = \"...\"}): no rubric: give one, or grader.rubric in the eval spec", 2)
  end
  if run.status == "failed" then return verdict.fail("the run failed: not graded") end
  local cfg = config.merge(copy(grader.model or {}), copy(opts.model or {}))
  local m, merr = model.from(cfg)
  if not m then return verdict.fail("no model to grade with: " .. merr.message) end
  local n = ((run.grading or {}).asked or 0) + 1
  local result, err, stats = ask(run, m, {messages = {{role = "system", content = SYSTEM},
    {role = "user", content = prompt(run, rubric, opts)}}, schema = graded.SCHEMA}, n)
  count(run, stats, m)
  local by = ("graded by %s/%s"):format(m.provider, m.model)
  if not result then return verdict.fail(("%s: the grading failed: %s"):format(by, errors.from(err).message)) end
  local v = result.value
  if type(v) ~= "table" or type(v.passed) ~= "boolean" then return verdict.fail(by .. ": the answer is not a grade") end
  if type(v.score) ~= "number" or v.score ~= v.score or v.score < 0 or v.score > 1 then
    return verdict.fail(("%s: it answered score %s, not a number from 0 to 1"):format(by, tostring(v.score)))
  end
  return {passed = v.passed, score = v.score, note = ("%s: %s"):format(by, tostring(v.note))}
end

return graded
