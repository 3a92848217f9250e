-- luagent.sandbox.session: what every backend's session shares — the part
-- that talks to the session's supervisor (luagent.sandbox.supervisor), the
-- same whatever the session is (a Docker container, a Kubernetes pod):
-- commands, python, spawn, one-file reads and puts, extraction and
-- snapshots through the supervisor's pack, staging, a warm pool's wait, the
-- wait that notices an engine that hangs, recovery when the supervisor dies
-- (luagent.sandbox.recovery), and removal's checks. A backend's session
-- class inherits it (session.class()) and adds what only it knows; the
-- contract is luagent.SandboxSession (lua/meta/sandbox_backend.lua). What a
-- backend's session provides for this module:
--
--   session:start(), :put(entries)          (the contract's)
--   session:_start_supervisor() -> ex | nil, err     serve started and ready
--   session:_revive([attempt]) -> revived | nil, err   the session runs (started again if it stopped):
--       {restarted = boolean (it had stopped), reset = boolean (its workspace was emptied: it
--        is staged again), reset_why = text (why, for session.workspace_reset), oom_killed =
--        boolean, why = text | nil (what the backend said of the stop), done = text | nil (what
--        was done, when not "its container had stopped and was started again")}
--   session:_engine_lost() -> err | nil       the engine does not answer (a short call)
--   session:_engine_gone() -> err | nil       before a removal: the engine is known gone
--   session.engine_name                     "the Docker engine", "the Kubernetes API server"
--   session.workspace_kept_text             what a container restart keeps: "the workspace volume is kept"
--   session:_stopped() -> why | nil           (gVisor) the session stopped under a command
--   session:_remove_objects() -> true | nil, err   what the backend made, removed
--   session:_read_archive(path, max) -> content | nil, err, via   optional: a file read
--       without the supervisor (the engine's archive), used while serve is not up
--   session.put_via                           "archive" | "supervisor": how put goes
--
-- Every error is a luagent.errors value; when the supervisor or the session
-- dies under a call, the call returns kind "sandbox_restarted" after the
-- session came back, and when the engine does not answer, kind
-- "docker_unreachable" or "cluster_unreachable" at once.
--
-- The engine going away (spec.engine_grace seconds, sandbox.open's
-- engine_grace): an extraction (what brings outputs home) that finds the
-- engine gone waits that long for it to come back, saying so once, and
-- tries again; after one wait ran out, later ones do not wait until the
-- engine answered again. A session whose extraction could not read its
-- files for want of the engine is kept, not removed: session:remove()
-- returns an error saying so, and the next run's sweep or `luagent sandbox
-- prune` rescues its outputs (luagent.sandbox.leftovers). Commands never
-- wait: their call says at once that the engine went away.
local errors = require "luagent.errors"
local fs = require "luagent.fs"
local tar = require "luagent.tar"
local sched = require "luagent.sched"
local command = require "luagent.sandbox.command"
local recovery = require "luagent.sandbox.recovery"
local packing = require "luagent.sandbox.packing"
local process = require "luagent.sandbox.process"
local owner = require "luagent.sandbox.owner"

local session = {}

-- The supervisor enforces a command's timeout itself; the host waits this
-- much longer (its kill takes up to 5 s) before it takes the supervisor for
-- stuck.
local BACKSTOP = 15
-- While a command runs, the host asks the engine every HEARTBEAT seconds
-- whether it still answers (a 5 s ping). An engine that hangs (stopped,
-- wedged) keeps its connections open and sends nothing, so without this a
-- command would wait out its whole timeout. Two pings in a row without an
-- answer end the wait; one could be a moment of load.
local HEARTBEAT = 15
local CONTAINER_CHECK = 2
local SAVE_FROM = owner.LABELS.save_from
-- Extraction and snapshots: the most a pack may run.
local PACK_TIMEOUT = 3600

---@class luagent.SessionBase: luagent.SandboxSession
local Session = {}
Session.__index = Session
session.Session = Session

-- A backend's session class: its own methods first, then these.
function session.class()
  local class = setmetatable({}, {__index = Session})
  class.__index = class
  return class
end

function Session:_workspace_path(name)
  return name == "" and self.workspace or self.workspace .. "/" .. name
end

-- ---- one file: through the supervisor (a round trip), or the backend's archive ----

-- A single file goes through the supervisor's read and put (answered by
-- serve itself: ~1 ms where the archive endpoint costs 40-180 ms). serve is
-- started with the session (Session:start) and may still be coming up when
-- the first file operation comes: that one waits for it, which costs less
-- than the archive endpoint, and every later one finds it up. Only a
-- supervisor that cannot start, or is gone, sends a file through the engine.
function Session:_file_supervisor()
  if self.closing then return false end
  if self.serving then self:_ready() end
  return not self.serving and self.supervisor ~= nil and self.supervisor:alive() == true
end

-- What serve's read and put say when they refuse: "<kind> <message>".
local FILE_KINDS = {not_found = "not_found", too_large = "too_large", not_a_file = "not_a_file", refused = "refused",
                    unreadable = "permission", unwritable = "permission", no_space = "io"}

local function file_error(text, what)
  local kind, message = (text or ""):match("^(%S+) ([^\n]*)")
  local known = FILE_KINDS[kind]
  if known == "permission" and not message:lower():find("permission", 1, true) then known = "io" end
  return errors.new(known or "protocol", what .. ": " .. (message or text or "no reason given"), {reason = kind})
end

-- The job again once after the session came back (the supervisor or its
-- container died under it): a read changes nothing and a put replaces the
-- file whole.
function Session:_file_op(op, job)
  local raw, err = self:_run(op, job)
  if not raw and err.kind == "sandbox_restarted" then
    job.id = nil
    raw, err = self:_run(op, job)
  end
  return raw, err
end

-- content | nil, err; and which way it came: "supervisor" or "archive".
function Session:read_file(name, opts)
  local max = opts and opts.max_bytes or 64 * 1024 * 1024
  if self._read_archive and not (max >= 1 and self:_file_supervisor()) then
    return self:_read_archive(self:_workspace_path(name), max)
  end
  local path = self:_workspace_path(name)
  local raw, err = self:_file_op("read", {path = path, max_bytes = max})
  if not raw then return nil, err, "supervisor" end
  if raw.exit_code ~= 0 or raw.failure then
    return nil, file_error(raw.failure or raw.stderr, "reading " .. path), "supervisor"
  end
  if raw.truncated or #raw.stdout > max then
    return nil, errors.new("too_large", ("reading %s: the file is larger than %d bytes"):format(path, max)), "supervisor"
  end
  return raw.stdout, nil, "supervisor"
end

-- session:put_file(name, data [, mode]) -> true | nil, err: one file, whole
-- (written beside and renamed), its missing folders made, all the command
-- user's.
local PUT_MAX = 64 * 1024 * 1024 - 1 -- one request field at most (src/core/supervisor_proto.h)

function Session:put_file(name, data, mode)
  if #data > PUT_MAX or (self._read_archive and not self:_file_supervisor()) then
    local ok, err = self:put({{name = name, data = data, mode = mode}})
    return ok, err, self.put_via
  end
  local path = self:_workspace_path(name)
  local raw, err = self:_file_op("put", {path = path, data = data, mode = mode})
  if not raw then return nil, err, "supervisor" end
  if raw.exit_code ~= 0 or raw.failure then
    return nil, file_error(raw.failure or raw.stderr, "staging " .. name .. " into the sandbox failed"), "supervisor"
  end
  return true, nil, "supervisor"
end

-- A file of an agent's skill (luagent.skills), written as root under
-- /skills by the supervisor's skill op: read-only to commands.
function Session:put_skill_file(path, data, mode)
  if #data > PUT_MAX then
    return errors.fail("too_large", ("%s: %d bytes; a skill's file holds %d at most"):format(path, #data, PUT_MAX))
  end
  local raw, err = self:_file_op("skill", {path = path, data = data, mode = mode})
  if not raw then return nil, err end
  if raw.exit_code ~= 0 or raw.failure then
    return nil, file_error(raw.failure or raw.stderr, "staging " .. path .. " into the sandbox failed")
  end
  return true
end

-- A snapshot is extracted safely on the host first (refusing what could
-- escape), then staged like a folder.
function Session:_restore(host_tar)
  local dir, err = fs.temp_dir("luagent-restore")
  if not dir then return nil, errors.from(err) end
  local report
  report, err = tar.extract(host_tar, dir, {strip = "workspace", max_bytes = self.spec.max_extract,
                                            max_entries = self.spec.max_extract_entries})
  local ok = report ~= nil
  if ok then
    self.restored = report
    local entries = {}
    for _, e in ipairs(fs.walk(dir) or {}) do
      if e.type == "directory" then entries[#entries + 1] = {name = e.path, dir = true}
      elseif e.type == "file" then entries[#entries + 1] = {name = e.path, file = dir .. "/" .. e.path}
      end
    end
    if #entries > 0 then ok, err = self:put(entries) end
  end
  fs.remove(dir)
  if not ok then return nil, errors.from(err) end
  return true
end

-- What sandbox.open puts into the workspace: the manifest, then a snapshot.
function Session:_stage()
  local ok, err = true, nil
  if #self.spec.staged > 0 then ok, err = self:put(self.spec.staged) end
  if ok and self.spec.restore then ok, err = self:_restore(self.spec.restore) end
  return ok, err
end

-- Starts serve in the background: the first command waits for it (an exec
-- attach costs a round trip, which staging or the recipe's own work hides).
function Session:_serve(revive)
  self.serving = sched.spawn(function()
    if revive then
      local ok, err = self:_revive()
      if not ok then return nil, err end
    end
    local ex, err = self:_start_supervisor()
    if ex and self.closing then ex:close() end
    return ex, err
  end)
end

-- ---- a warm pool's session ----

function Session:warm()
  local ex, err = self:_ready()
  if not ex then return nil, err end
  return true
end

function Session:alive()
  return not self.closing and not self.serving and self.supervisor ~= nil and self.supervisor:alive() == true
end

-- A small manifest goes in through the warm supervisor, a `tar -x` run as
-- the command user (a fork: ~5-15 ms here, where an archive PUT costs

-- ---- commands ----

local closed_error = recovery.closed_error

-- The live supervisor, or nil, err: the session is closed, serve could not
-- start (the error; the next call tries again), or the supervisor died since
-- the last call (the session comes back, and this call, which did not run,
-- says so).
function Session:_ready()
  local serving = self.serving
  if serving then
    local ex, err = recovery.await(serving)
    if self.serving == serving then
      self.serving, self.supervisor = nil, ex
      if not ex and not self.closing then
        self:_serve()
        return nil, errors.wrap(err, "the sandbox supervisor could not start")
      end
    end
  end
  if self.closing then return nil, closed_error(self) end
  local ex = self.supervisor
  if ex and ex:alive() then return ex end
  return nil, recovery.recover(self, ex, ex and select(2, ex:alive()) or "it was not running")
end

function Session:ready()
  return self:_ready()
end

-- ex:wait for job's end, at most `limit` seconds (nil: no limit), asking
-- the engine every HEARTBEAT seconds whether it still answers: true | false
-- (the limit passed) | nil, err (the supervisor died, or the engine hangs).
-- Under gVisor the backend is asked too, every CONTAINER_CHECK seconds,
-- whether the session still runs (session:_stopped() -> why | nil): runsc's
-- exec does not see its sandbox die, so serve's stream can outlive a killed
-- container (a command in flight waited out its timeout + BACKSTOP); a
-- container OOM-killed (gVisor has no memory cgroup inside: a command over
-- the cap ends the whole sandbox) is said so.
-- Hands what job printed since the last time to its on_output(text, stream).
-- A callback that raises has its error kept (job.on_output_error) and is not
-- called again: the command runs to its end as it would have.
local function deliver_fresh(ex, job)
  local out, err = ex:fresh(job)
  for _, chunk in ipairs{{out, "stdout"}, {err, "stderr"}} do
    if chunk[1] ~= "" and not job.on_output_error then
      local ok, why = pcall(job.on_output, chunk[1], chunk[2])
      if not ok then job.on_output_error = why end
    end
  end
end

function Session:_wait_answering(ex, job, limit)
  local deadline = limit and sched.now() + limit
  local missed, next_ping = 0, sched.now() + HEARTBEAT
  local beat = self.spec.gvisor and CONTAINER_CHECK or HEARTBEAT
  local live = job.on_output ~= nil
  while true do
    local slice = deadline and math.min(beat, deadline - sched.now()) or beat
    if slice <= 0 then return false end
    local ended, err = ex:wait(job, slice, live)
    if live and ended ~= nil then deliver_fresh(ex, job) end
    if ended ~= false then return ended, err end
    if self.spec.gvisor then
      local why = self:_stopped()
      if why then return nil, why end
    end
    if sched.now() >= next_ping then
      next_ping = sched.now() + HEARTBEAT
      local lost = not (deadline and sched.now() >= deadline) and self:_engine_lost()
      missed = lost and missed + 1 or 0
      if missed >= 2 then return nil, lost.message end
    end
  end
end

-- Sends job and waits for its end: the supervisor's raw result and the
-- seconds it took | nil, err. A fault (the supervisor died or stopped
-- answering) becomes a sandbox_restarted error once the session is back.
function Session:_run(op, job)
  local ex, err = self:_ready()
  if not ex then return nil, err end
  local started = sched.now()
  local ok, sent
  ok, err = ex:send(op, job)
  if ok and job.on_output then ex:fresh(job) end -- from now on output is kept for it as it comes
  if ok then
    sent = true
    ok, err = self:_wait_answering(ex, job, (job.timeout or 0) > 0 and job.timeout + BACKSTOP or nil) -- 0: none
    if not ok then ex:result(job) end -- forgotten
  end
  if ok == false then
    err = ("it did not end the command within %d s of its timeout"):format(BACKSTOP)
  end
  if not ok then
    if self.closing then return nil, closed_error(self) end
    return nil, recovery.recover(self, ex, type(err) == "table" and err.message or err, sent)
  end
  return ex:result(job), sched.now() - started
end

function Session:exec(job)
  local raw, duration = self:_run("run", job)
  if not raw then return nil, duration end
  return command.result(raw, duration)
end

function Session:_python(code, opts)
  local job = {code = code, timeout = opts.timeout, max_output = opts.max_output, on_output = opts.on_output}
  local raw, duration = self:_run("python", job)
  opts.on_output_error = job.on_output_error
  if not raw then return nil, duration end
  local result = command.result(raw, duration, {python = true, lost = self.python_lost})
  self.python_lost = false
  return result
end

-- One call at a time: each waits for the one before, so its timeout counts
-- only its own running time.
function Session:python(code, opts)
  local before = self.python_last
  local this = sched.spawn(function()
    if before then before:wait() end
    return self:_python(code, opts)
  end)
  self.python_last = this
  return recovery.await(this)
end

function Session:spawn(job, text)
  local ex, err = self:_ready()
  if not ex then return nil, err end
  local ok
  ok, err = ex:send("spawn", job)
  if not ok then return nil, recovery.recover(self, ex, err.message) end
  return process.new(self, ex, job, text)
end

-- ---- extraction: a tar streamed by the supervisor's pack ----

-- Refuses, and reports, what could land outside host_dir, and what is over
-- the limits (a sandbox can make a terabyte sparse file for free): the
-- supervisor refuses an entry over the limits without reading it, and the
-- host extracts what comes by the rules of luagent.tar.
-- Waits for the engine (spec.engine_grace seconds, once: see the top) and
-- says so; true when it answers again.
function Session:_wait_engine(err, what)
  local grace = self.spec.engine_grace or 0
  -- a run that is stopping (Ctrl-C) does not wait: its outputs are rescued later
  if grace <= 0 or self.engine_given_up or self.closing or sched.cancelled() then return false end
  io.stderr:write(("luagent: %s; waiting up to %s s for it to come back (sandbox engine_grace), to %s\n")
    :format((err.cause or err).message, grace, what))
  local started = sched.now()
  local back = recovery.wait_engine(self, grace)
  if not back then
    self.engine_given_up = true
    return false
  end
  io.stderr:write(("luagent: %s answers again after %.1f s\n"):format(self.engine_name, sched.now() - started))
  return true
end

-- A pack reads and changes nothing in the session: after a restart (the
-- engine came back) it runs again.
function Session:_pack(job, what)
  local raw, err = self:_run("pack", job)
  if not raw and recovery.unreachable(err) and self:_wait_engine(err, what) then
    raw, err = self:_run("pack", job)
  end
  if not raw and err.kind == "sandbox_restarted" then raw, err = self:_run("pack", job) end
  if raw then self.engine_given_up = nil end
  return raw, err
end

-- What could not be read for want of the engine keeps a session that has
-- outputs to save (see the top): a rescue brings them home.
function Session:_unread(err)
  if recovery.unreachable(err) and self.spec.labels[SAVE_FROM] then self.unread = err.kind end
  return err
end

function Session:extract(name, host_dir, opts)
  local strip = name == "" and "workspace" or name:match("([^/]+)$")
  local path = self:_workspace_path(name)
  local raw, err = self:_pack({path = path, dest = host_dir, strip = strip,
    max_bytes = opts.max_bytes or self.spec.max_extract, max_entries = opts.max_entries or self.spec.max_extract_entries,
    timeout = PACK_TIMEOUT}, "read " .. path .. " from sandbox " .. self.id)
  if not raw then return nil, self:_unread(err) end
  if name == self.spec.labels[SAVE_FROM] then self.unread = nil end
  local report
  report, err = packing.extract_report(raw, path)
  if self.workspace_reset then (report or err).workspace_reset = self.workspace_reset end
  return report, err
end

function Session:snapshot(host_tar)
  local raw, err = self:_pack({path = self.workspace, save = host_tar, max_bytes = self.spec.max_extract,
    max_entries = self.spec.max_extract_entries, timeout = PACK_TIMEOUT}, "snapshot sandbox " .. self.id)
  if not raw then return nil, err end
  return packing.snapshot_bytes(raw, self.spec.max_extract)
end


-- ---- removal ----

-- Lets go of the session (its supervisor's connection); its container (or
-- pod) and workspace stay.
function Session:forget()
  self.closing = true -- a serve still starting closes itself
  if self.supervisor then self.supervisor:close() end
end

-- Kept, with an error saying so, while it holds files an extraction could
-- not read for want of the engine; not tried while the engine's socket is
-- gone (a stopping engine may still answer a connection it had, and remove
-- the container half-way).
function Session:remove()
  if self.removed then return true end
  if not self.closing then self:forget() end
  if self.unread then
    return errors.fail(self.unread, ("it is kept, for the rescue of the outputs that could not be read when "
      .. "%s went away (by the next luagent run on this engine, or 'luagent sandbox prune')"):format(self.engine_name),
      {session = self.id, kept = true})
  end
  local gone = self:_engine_gone()
  if gone then return nil, gone end
  local ok, err = self:_remove_objects()
  self.removed = ok == true
  return ok, err
end


return session
