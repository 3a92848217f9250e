-- luagent.checks.verdict (internal; the parts of luagent.checks use it): a
-- check's answer and what every helper checks of its arguments.
--
--   verdict.pass(note [, score]) / verdict.fail(note [, score]) -> {passed, score, note}
--       (score: 1 when passed, 0 when failed, unless given)
--   verdict.run(run, name) -> run        raises (misuse) when run is not the table a check gets
--   verdict.list(names, name, what) -> names   a non-empty list of strings, or raises
--   verdict.join(list) -> "a, b, c"      (or "none")
local verdict = {}

function verdict.pass(note, score)
  return {passed = true, score = score or 1, note = note}
end

function verdict.fail(note, score)
  return {passed = false, score = score or 0, note = note}
end

-- level 3: the caller of the helper that checks its arguments
function verdict.run(run, name)
  if type(run) ~= "table" or (run.dir == nil and run.trace == nil and run.events == nil) then
    error(("checks.%s(run, ...): run must be the table the check gets (return function(run) ... end), got %s")
      :format(name, type(run)), 3)
  end
  return run
end

function verdict.list(names, name, what)
  local ok = type(names) == "table" and #names > 0
  for _, n in ipairs(type(names) == "table" and names or {}) do ok = ok and type(n) == "string" end
  if not ok then error(("checks.%s: %s must be a list of names, e.g. {\"a\", \"b\"}"):format(name, what), 3) end
  return names
end

function verdict.join(list)
  if #list == 0 then return "none" end
  return table.concat(list, ", ")
end

return verdict
