-- The check of tests/e2e/checks_test.sh: every luagent.checks helper on the
-- run, written to the run's verdicts.json for the test to read; the verdict
-- is all of them, then (only when they all pass) a model's grade.
local checks = require "luagent.checks"
local json, fs = luagent.json, luagent.fs

local SCHEMA = {type = "object", properties = {total = {type = "number"}}, required = {"total"}}
local ORDER = {"used_tool", "not_used_tool", "tool_order", "max_turns", "max_commands", "no_failed_command",
               "no_failed_exit", "output_text", "output_matches", "csv_columns", "output_json", "answer_schema",
               "max_cost"}

return function(run)
  local v = {
    used_tool = checks.used_tool(run, "write_file"),
    not_used_tool = checks.not_used_tool(run, "run_shell"),
    tool_order = checks.tool_order(run, {"write_file", "run_python"}),
    max_turns = checks.max_turns(run, 3),
    max_commands = checks.max_commands(run, 1),
    no_failed_command = checks.no_failed_command(run),
    no_failed_exit = checks.no_failed_command(run, "exit"),
    no_timed_out = checks.no_failed_command(run, "timed_out"),
    output_text = checks.output_text(run, "report.md", "kWh"),
    output_matches = checks.output_matches(run, "output/report.md", "total is %d+"),
    csv_columns = checks.csv_columns(run, "data.csv", {"timestamp", "kwh"}),
    output_json = checks.output_json(run, "result.json", SCHEMA),
    answer_schema = checks.answer_schema(run, SCHEMA),
    max_cost = checks.max_cost(run, 0.05),
    outside = checks.output_text(run, "../../../../../etc/passwd", "root"),
    bad_schema = checks.output_json(run, "result.json", {type = "objekt"}),
  }
  v.any = checks.any{v.used_tool, v.not_used_tool}
  v.weighted = checks.weighted{{v.max_turns, 1}, {v.output_text, 3}, pass = 0.7}
  local list = {}
  for i, name in ipairs(ORDER) do list[i] = v[name] end
  list[#list + 1] = function() return checks.graded(run) end
  v.all = checks.all(list)
  assert(fs.write(run.dir .. "/verdicts.json", json.encode(v)))
  return v.all
end
