-- luagent.sandbox.recovery: what a session does when its supervisor or its
-- container dies under it (killed from the host, the engine restarted, a
-- bug). The supervisor's channel ends, and then:
--   - the call that was running, or the next call when it died between
--     calls, returns nil, err of kind "sandbox_restarted" — never a command
--     result made of an engine error;
--   - before that error is returned the session is back: a container that
--     stopped is started again (its PID 1, the supervisor, is in its own
--     volume), a tmpfs workspace, which the stop emptied, is staged again
--     with what sandbox.open staged, and a new `serve` is started;
--   - the next box:python call reports state_lost (the interpreter is gone).
-- Every task that saw the same executor die shares one recovery.
--
--   recovery.recover(session, dead_executor, why) -> err
local errors = require "luagent.errors"
local loop = require "luagent.loop"
local supervisor = require "luagent.sandbox.supervisor"

local recovery = {}

local ATTEMPTS = 3

-- Brings the session back; returns what was restarted ("supervisor" or
-- "container") | nil, err.
local function restart(session)
  if session.executor then session.executor:close() end -- its serve ends with its stdin
  session.executor = nil
  session.python_lost = true
  local last_err
  for attempt = 1, ATTEMPTS do
    local running, fresh = session:_run_container()
    if not running then return nil, fresh end
    local ok, err = true, nil
    if fresh then
      session.restarted_container = true
      if session.spec.mounts.workspace.size then ok, err = session:_stage() end -- the tmpfs was emptied
    end
    if ok then
      local ex
      ex, err = supervisor.start(session)
      if ex then
        session.executor = ex
        session.restarts = session.restarts + 1
        local what = session.restarted_container and "container" or "supervisor"
        session.restarted_container = nil
        return what
      end
    end
    last_err = err
    if session.closing then break end
    loop.sleep(0.2 * attempt) -- e.g. the container was still stopping
  end
  return nil, last_err
end

local function restart_error(session, what, why)
  local done = what == "container"
    and ("its container had stopped and was started again%s"):format(session.spec.mounts.workspace.size
      and ", and the workspace was reset to what sandbox.open staged" or " (the workspace volume is kept)")
    or "a new supervisor was started (the workspace is kept)"
  return errors.new("sandbox_restarted", ("the sandbox session %s lost its supervisor (%s); %s. The Python "
    .. "interpreter's state is lost, and the command did not run, or ran in part: run it again if needed")
    :format(session.id, why, done), {restarted = what, session = session.id})
end

-- The error for a call whose executor `dead` died (or stopped answering),
-- returned once the session is back (or the error that kept it down).
function recovery.recover(session, dead, why)
  why = tostring(why or "it stopped"):gsub("^the sandbox supervisor is gone: ", "")
  local r = session.recovery
  if not (r and r.dead == dead) then
    r = {dead = dead}
    r.task = loop.spawn(function() return restart(session) end)
    session.recovery = r
  end
  local what, err = r.task:wait()
  if session.closing then return errors.new("closed", ("the sandbox session %s is closed"):format(session.id)) end
  if not what then
    return errors.wrap(err, ("the sandbox session %s lost its supervisor (%s) and could not start it again")
      :format(session.id, why))
  end
  return restart_error(session, what, why)
end

return recovery
