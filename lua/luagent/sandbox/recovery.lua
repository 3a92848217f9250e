-- luagent.sandbox.recovery: what a session does when its supervisor or its
-- container dies under it (killed from the host, the engine restarted, a
-- bug), or when its engine (a Docker engine, a Kubernetes API server)
-- goes away. The supervisor's
-- channel ends, and then:
--   - when the engine does not answer (it stopped, or died), the call that
--     was running, or the next call, returns nil, err of kind
--     "docker_unreachable" (or "cluster_unreachable") saying so, at once: nothing is restarted, and the
--     next call tries again (the engine may be back);
--   - else the call returns nil, err of kind "sandbox_restarted" — never a
--     command result made of an engine error — once the session is back
--     (session:_revive, the backend's: a container that stopped is started
--     again, a pod's container is restarted by its kubelet), a workspace
--     the stop emptied is staged again with what sandbox.open staged
--     (session.workspace_reset says when and why, for whoever reads the
--     outputs later), and a new `serve` is started;
--   - the next box:python call reports state_lost (the interpreter is gone).
-- Every task that saw the same supervisor die shares one recovery.
--
--   recovery.recover(session, dead_supervisor, why [, running]) -> err
--   recovery.unreachable(err) -> boolean           err says the engine does not answer
--   recovery.wait_engine(session, seconds) -> true | nil, err   until it answers again, at most seconds
--   recovery.closed_error(session) -> err          kind closed: the session is closing
--   recovery.await(task) -> its results        a cancellation it ended with is raised, never returned
local errors = require "luagent.errors"
local sched = require "luagent.sched"

local recovery = {}

local ATTEMPTS = 3
-- How often a wait for the engine asks whether it is back.
local POLL = 0.5

-- A task's results; a cancellation (Ctrl-C, SIGTERM) it ended with is the
-- waiter's too, and goes on up.
function recovery.await(task)
  local value, err = task:wait()
  if value == nil and type(err) == "table" and err.kind == "cancelled" then error(err, 0) end
  return value, err
end

-- Does err say the engine (a Docker engine, a Kubernetes API server) does not answer?
function recovery.unreachable(err)
  return type(err) == "table" and (err.kind == "docker_unreachable" or err.kind == "cluster_unreachable")
end

function recovery.wait_engine(session, seconds)
  local deadline = sched.now() + seconds
  while true do
    local lost = session:_engine_lost()
    if not lost then return true end
    if sched.now() >= deadline or session.closing then return nil, lost end
    sched.sleep(math.min(POLL, deadline - sched.now()))
  end
end

-- Brings the session back; returns what was restarted ("supervisor" or
-- "container") | nil, err.
local function restart(session)
  local lost = session:_engine_lost()
  if lost then return nil, lost end
  if session.supervisor then session.supervisor:close() end -- its serve ends with its stdin
  session.supervisor = nil
  session.python_lost = true
  local last_err
  for attempt = 1, ATTEMPTS do
    local revived, rerr = session:_revive(attempt)
    if not revived then return nil, session:_engine_lost() or rerr end
    if revived.restarted then
      session.restarted_container = true
      session.container_oom_killed = session.container_oom_killed or revived.oom_killed
      session.stop_reason = revived.why or session.stop_reason
      session.reset_by_restart = revived.reset
      session.restart_done = revived.done
    end
    -- the supervisor first: a backend without an archive API stages through it
    local ex, err = session:_start_supervisor()
    local ok = ex ~= nil
    if ok then
      session.engine_unreachable = nil
      session.supervisor = ex
      if revived.reset then
        session.workspace_reset = revived.reset_why
        ok, err = session:_stage()
      end
    end
    if ok then
      session.restarts = session.restarts + 1
      local what = session.restarted_container and "container" or "supervisor"
      session.restarted_container = nil
      return what
    end
    last_err = session:_engine_lost() or err
    if session.closing or recovery.unreachable(last_err) then break end
    sched.sleep(0.2 * attempt) -- e.g. the container was still stopping
  end
  return nil, last_err
end

-- What a call on a session that is closing gets.
function recovery.closed_error(session)
  return errors.new("closed", ("the sandbox session %s is closed"):format(session.id))
end

-- Why a container the engine OOM-killed stopped.
function recovery.oom_killed_text(session)
  return "its container passed its memory limit and was OOM-killed" .. (session.spec.gvisor
    and " (under gVisor a command over the memory cap ends the whole sandbox)" or "")
end

-- The stream's own last words say little when the engine OOM-killed the
-- container (under gVisor: "urpc method failed: EOF"), and the container
-- may still show as running when the stream ends: what the engine said of
-- the stopped container, once the restart looked, is the reason given.
local function restart_error(session, what, why)
  if what == "container" and session.container_oom_killed then why = recovery.oom_killed_text(session)
  elseif what == "container" and session.stop_reason then why = session.stop_reason end
  local done = what == "container" and session.restart_done
  session.container_oom_killed, session.stop_reason, session.restart_done = nil, nil, nil
  done = done or what == "container"
    and ("its container had stopped and was started again%s"):format(session.reset_by_restart
      and ", and the workspace was reset to what sandbox.open staged" or (" (%s)"):format(session.workspace_kept_text))
    or "a new supervisor was started (the workspace is kept)"
  return errors.new("sandbox_restarted", ("the sandbox session %s lost its supervisor (%s); %s. The Python "
    .. "interpreter's state is lost, and the command did not run, or ran in part: run it again if needed")
    :format(session.id, why, done), {restarted = what, session = session.id})
end

-- Also marks the session: its removal asks the engine first (5 s) instead
-- of waiting out the removal calls' timeouts on an engine that hangs.
local function unreachable_error(session, err, running)
  session.engine_unreachable = true
  local message = running
    and ("%s went away while the command ran, so its result is lost: %s. The sandbox session %s "
      .. "cannot be used until it is back"):format(session.engine_name, err.message, session.id)
    or ("the sandbox session %s cannot be reached: %s"):format(session.id, err.message)
  return errors.new(err.kind, message, {session = session.id, endpoint = err.endpoint, cause = err})
end

-- The error for a call whose supervisor `dead` died (or stopped answering),
-- returned once the session is back (or the error that kept it down);
-- `running`: the call's command had been sent. A recovery that failed is
-- not shared with later calls: each tries again.
function recovery.recover(session, dead, why, running)
  why = tostring(why or "it stopped"):gsub("^the sandbox supervisor is gone: ", "")
  local r = session.recovery
  if not (r and r.dead == dead and not r.failed) then
    r = {dead = dead}
    r.task = sched.spawn(function() return restart(session) end)
    session.recovery = r
  end
  local what, err = recovery.await(r.task)
  if session.closing then return recovery.closed_error(session) end
  if not what then
    r.failed = true
    if recovery.unreachable(err) then return unreachable_error(session, err, running) end
    return errors.wrap(err, ("the sandbox session %s lost its supervisor (%s) and could not start it again")
      :format(session.id, why))
  end
  return restart_error(session, what, why)
end

return recovery
