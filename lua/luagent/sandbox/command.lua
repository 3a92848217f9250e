-- luagent.sandbox.command: what a command in a sandbox did, in its one shape,
-- luagent.ExecResult (lua/meta/sandbox.lua), made here for every way a command
-- runs: box:exec, box:python and the end of a box:spawn process. The
-- supervisor's raw result (luagent.SupervisorResult) goes in; what a recipe,
-- a tool and the trace read comes out.
local command = {}

-- The result of a command whose raw result the supervisor gave, `duration`
-- seconds after it was sent. A python call (opts.python) also says whether
-- it ran in the persistent interpreter and whether that interpreter's state
-- was lost before it (opts.lost: the session knows of a restart the raw
-- result cannot).
function command.result(raw, duration, opts)
  local result = {
    stdout = raw.stdout, stderr = raw.stderr, exit_code = raw.exit_code, timed_out = raw.timed_out,
    oom_killed = raw.oom_killed, killed = raw.killed, truncated = raw.truncated, duration = duration,
    stdout_bytes = raw.stdout_bytes, stderr_bytes = raw.stderr_bytes, restarted = false,
  }
  if opts and opts.python then
    result.persistent = not (raw.exit_code == 127 and (raw.failure or ""):find("python3", 1, true))
    result.state_lost = raw.state_lost or opts.lost or false
  end
  return result
end

-- The fields of a result a sandbox_exec trace event carries (none when the
-- command did not run).
local TRACED = {"exit_code", "duration", "timed_out", "oom_killed", "killed", "truncated", "stdout_bytes",
                "stderr_bytes"}
function command.traced(event, result)
  for _, k in ipairs(TRACED) do event[k] = result and result[k] end
  return event
end

return command
