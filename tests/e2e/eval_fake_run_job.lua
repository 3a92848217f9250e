-- Drives luagent.eval with a fake run_job (no recipe really runs), for the
-- Ctrl-C test of eval_cli_test.sh:
--   luagent run tests/e2e/eval_fake_run_job.lua -- SPEC EVALS_DIR STARTS_LOG
-- Each run sleeps 0.4 s, then answers as luagent.run's run_job would; every
-- start is appended to STARTS_LOG. Prints "ready" once the eval starts.
local fs = luagent.fs
local sched = require "luagent.sched"
local spec_file, evals_dir, starts = ...

local spec = assert(require("luagent.eval.spec").load(spec_file))
local function run_job(job)
  assert(fs.append(starts, ("%s/%s/%d\n"):format(job.variant, job.input, job.epoch)))
  sched.sleep(0.4)
  return {status = "ok", final = {output = "done", stopped_by = "answer", turns = 2}, stats = {cost = 0,
          input_tokens = 10, output_tokens = 5, cached_calls = 0, live_calls = 2}}
end
print("ready"); io.stdout:flush()
local report = assert(require("luagent.eval").run(spec, {run_job = run_job, evals_dir = evals_dir}))
print("STATUS " .. report.status)
print("DIR " .. report.dir)
io.write(report.table)
