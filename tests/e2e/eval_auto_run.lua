-- Drives luagent.eval with concurrency auto and the real run_job, for
-- tests/e2e/eval_auto_test.sh:
--   luagent run tests/e2e/eval_auto_run.lua -- SPEC EVALS_DIR SLOW_AFTER
-- Counts the sandboxes open at once (sandbox_open / sandbox_close events of
-- every run) and, from the SLOW_AFTER-th session on, makes the engine slow:
-- each session's create waits 1.5 s first (a fault injected at placement,
-- luagent.sandbox.engine_set.create). Prints MAX_OPEN, STATUS, WIDTH lines.
local sched = require "luagent.sched"
local events = require "luagent.events"
local engines = require "luagent.sandbox.engine_set"
local spec_file, evals_dir, slow_after = ...

local open, max_open, made = 0, 0, 0
events.subscribe(function(ev)
  if ev.type == "sandbox_open" then
    open = open + 1
    max_open = math.max(max_open, open)
  elseif ev.type == "sandbox_close" then
    open = open - 1
  end
end)
local create = engines.create
engines.create = function(...)
  made = made + 1
  if made > tonumber(slow_after) then sched.sleep(1.5) end
  return create(...)
end
local spec = assert(require("luagent.eval.spec").load(spec_file))
local report = assert(require("luagent.eval").run(spec, {evals_dir = evals_dir}))
print("MAX_OPEN " .. max_open)
print("STATUS " .. report.status)
for _, h in ipairs(report.widths) do print(("WIDTH %d %s"):format(h.width, h.why)) end
