---@meta luagent.checks
-- luagent.checks: one-line checks for an eval's check file — on the path a run
-- took (its trace) as well as on what it made — and ways to compose them
-- (lua/luagent/checks.lua, lua/luagent/checks/*.lua; `luagent help checks`).
--
--   local checks = require "luagent.checks"
--   return function(run)
--     return checks.all{checks.used_tool(run, "run_python"), checks.max_turns(run, 10),
--                       checks.csv_columns(run, "anomalies.csv", {"timestamp", "energy_kwh"})}
--   end
--
-- Bad input (a path outside the run's outputs, a malformed schema or pattern,
-- an unreadable trace) fails that check with a note saying why; a helper
-- called wrongly raises. LuaLS annotations: definitions only.
-- luacheck: ignore 212 241  (declarations: arguments unused, classes never read)

---A check's answer (luagent.EvalVerdict): every helper returns one.
---@class luagent.CheckVerdict
---@field passed boolean
---@field score number 0..1 (1 or 0 unless the helper says how much was found)
---@field note string what was found, passing or not

---An item of all/any: a verdict, or a function returning one (called only when needed).
---@alias luagent.CheckItem luagent.CheckVerdict|fun(): luagent.CheckVerdict

---What checks.graded takes; a key it does not declare is refused (kind config, with a did-you-mean).
---@class luagent.GradedOptions
---@field rubric? string what the model judges (default: the spec's grader.rubric)
---@field model? table model settings over the spec's grader model (luagent.model.from's)
---@field outputs? boolean|string[] the text outputs shown to the model: all (default), none, or these
---@field trajectory? boolean show the model the run's tool calls too (default false)

---What checks.weighted takes: {verdict, weight} pairs, and the score that passes.
---@class luagent.WeightedItems
---@field [integer] {[1]: luagent.CheckItem, [2]: number}
---@field pass? number passed when the weighted mean is at least this (0..1); without it, when every item passed

---@class luagent.checks
local checks = {}

---Passed when the run called the tool (tool_call events of its trace).
---@param run luagent.EvalRun
---@param name string e.g. "run_python"
---@return luagent.CheckVerdict
function checks.used_tool(run, name) end

---Passed when the run never called the tool.
---@param run luagent.EvalRun
---@param name string
---@return luagent.CheckVerdict
function checks.not_used_tool(run, name) end

---Passed when these tools were called in this order (others may come between);
---score: the share of the list found in order.
---@param run luagent.EvalRun
---@param names string[] e.g. {"read_file", "run_python"}
---@return luagent.CheckVerdict
function checks.tool_order(run, names) end

---Passed when the run's agents took at most n model turns together (agent_turn events).
---@param run luagent.EvalRun
---@param n integer
---@return luagent.CheckVerdict
function checks.max_turns(run, n) end

---Passed when the run ran at most n sandbox commands (exec and python; sandbox_exec events).
---@param run luagent.EvalRun
---@param n integer
---@return luagent.CheckVerdict
function checks.max_commands(run, n) end

---Passed when no sandbox command failed, or none failed with this kind: "exit" (a
---non-zero exit status), "timed_out", "oom_killed", "killed", "error" (it did not run).
---@param run luagent.EvalRun
---@param kind? "exit"|"timed_out"|"oom_killed"|"killed"|"error"
---@return luagent.CheckVerdict
function checks.no_failed_command(run, kind) end

---Passed when the run's model calls cost at most this many dollars; a cached call counts
---what it cost when stored, so a cached rerun judges alike. A call of unknown cost fails.
---@param run luagent.EvalRun
---@param dollars number
---@return luagent.CheckVerdict
function checks.max_cost(run, dollars) end

---Passed when the output holds the text (each of a list: score the share found). path:
---as the manifest names it ("output/report.md") or inside output/ ("report.md").
---@param run luagent.EvalRun
---@param path string
---@param needle string|string[] plain text, not a pattern
---@return luagent.CheckVerdict
function checks.output_text(run, path, needle) end

---Passed when string.find(content, pattern) finds it: a Lua pattern, not a regex.
---@param run luagent.EvalRun
---@param path string
---@param pattern string
---@return luagent.CheckVerdict
function checks.output_matches(run, path, pattern) end

---Passed when the CSV's header has these columns (score the share found).
---@param run luagent.EvalRun
---@param path string
---@param columns string[]
---@return luagent.CheckVerdict
function checks.csv_columns(run, path, columns) end

---Passed when the output is JSON that matches the schema (luagent.schema's subset).
---@param run luagent.EvalRun
---@param path string
---@param schema table
---@return luagent.CheckVerdict
function checks.output_json(run, path, schema) end

---Passed when the final answer (a structured one, or JSON text) matches the schema.
---@param run luagent.EvalRun
---@param schema table
---@return luagent.CheckVerdict
function checks.answer_schema(run, schema) end

---A model judges the run against a rubric (its answer {passed, score, note}); the
---model is the spec's grader (grader.model over the recipe's model settings), the
---call cached like the runs', its cost kept apart (results: graded, grading_cost).
---@param run luagent.EvalRun
---@param opts? luagent.GradedOptions
---@return luagent.CheckVerdict
function checks.graded(run, opts) end

---A passing verdict (score 1 unless given).
---@param note? string
---@param score? number
---@return luagent.CheckVerdict
function checks.pass(note, score) end

---A failing verdict (score 0 unless given).
---@param note? string
---@param score? number
---@return luagent.CheckVerdict
function checks.fail(note, score) end

---Passed when every item passed (stops at the first failure before a function item);
---score the mean; note the failures' notes (all notes when it passed).
---@param items luagent.CheckItem[]
---@return luagent.CheckVerdict
function checks.all(items) end

---Passed when one item passed (stops at the first that does); score the best.
---@param items luagent.CheckItem[]
---@return luagent.CheckVerdict
function checks.any(items) end

---Score the weighted mean of {verdict, weight} pairs; passed when it is >= items.pass,
---or, without pass, when every item passed.
---@param items luagent.WeightedItems
---@return luagent.CheckVerdict
function checks.weighted(items) end

return checks
