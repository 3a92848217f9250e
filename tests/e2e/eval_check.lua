-- The check of tests/e2e/eval_test.sh: the run saved output/answer.txt, and
-- it and the final answer carry the variant's label (settings.label).
local fs = luagent.fs
return function(run)
  local answer = run.outputs["output/answer.txt"]
  local text = answer and fs.read(answer.path) or ""
  local label = run.settings.label
  local ok = text:sub(1, #label) == label and (run.output or ""):find(label, 1, true) ~= nil
  return {passed = ok, score = ok and 1 or 0, note = text}
end
