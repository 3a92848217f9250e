-- The check of the {{name}} recipe's eval ({{name}}.eval.yaml): `luagent eval`
-- calls it once per run and takes a verdict {passed, score, note} back. Each
-- line is one check from luagent.checks (`luagent help checks` lists them);
-- all passes when each of them does, and its score is their mean.
local checks = require "luagent.checks"

return function(run)
  return checks.all{
    checks.csv_columns(run, "output/columns.csv", {"file", "column", "type", "missing", "min", "mean", "max", "top"}),
    checks.output_text(run, "output/summary.md", {"column", "Worth a look"}),  -- the table, and what is odd
    checks.used_tool(run, "run_python"),
    checks.no_failed_command(run),
  }
end
