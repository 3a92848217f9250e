-- luagent.sandbox.docker: the sandbox backend on the local Docker engine. It
-- turns a session spec (built by luagent.sandbox) into a running session: a
-- workspace volume, a locked-down container, staging, restore, archives,
-- commands, removal.
--
-- What a backend provides (a warm pool, several engines or Kubernetes would
-- be one more module with these functions, and recipes would not change):
--   backend.client([{engine, docker_host}]) -> client | nil, err   the engine to talk to
--   backend.create(client, spec) -> session | nil, err   the session exists (removable), nothing runs yet
--   session:start() -> true | nil, err          started, manifest staged, snapshot restored
--   session.id, session.container, session.volume, session.restored (the restore report)
--   session:exec(job) -> result | nil, err      job = {argv, env = {K = "v"}, cwd, stdin, timeout, max_output}
--   session:python(code, {timeout, max_output}) -> result | nil, err
--       in a persistent interpreter where there is one; one call at a time, in call order
--   session:put(entries) -> true | nil, err     tar entries (see luagent.tar), names relative to the workspace
--   session:read_file(name, {max_bytes}) -> content | nil, err
--   session:extract(name, host_dir, {max_bytes, max_entries}) -> report | nil, err
--   session:snapshot(host_tar) -> bytes | nil, err
--   session:remove() -> true | nil, err         idempotent; a failed removal is tried again
-- result = {stdout, stderr, exit_code, timed_out, oom_killed, truncated, duration, stdout_bytes,
--           stderr_bytes, restarted}, plus persistent and state_lost for python calls.
-- Every error is a luagent.errors value.
--
-- Commands run through an executor; this session picks one and owns what an
-- overrunning command and an OOM kill mean. An executor provides:
--   executor.start(session) -> ex | nil, err    ready to run commands
--   ex.persistent                               python state survives between calls
--   ex:alive() -> boolean                       false: the session starts a new one
--   ex:start(job) -> true | nil, err            job = an exec job above, or {python = code, max_output}
--   ex:wait(job, seconds) -> true (ended) | false (time passed) | nil, err (the executor is gone)
--   ex:kill(job) -> boolean                     kill the job's whole process tree
--   ex:abandon(job)                             stop reading it (the container is restarted next)
--   ex:result(job) -> raw | nil, err            {stdout, stderr, exit_code, truncated, stdout_bytes,
--                                                 stderr_bytes, oom (when counted inside), state_lost}
--   ex:close()
-- luagent.sandbox.runner (a runner inside the container, one fork per
-- command) is used where it can start; luagent.sandbox.docker_exec (one
-- Docker exec per command) otherwise.
local engine = require "luagent.engine"
local engine_io = require "luagent.engine_io"
local errors = require "luagent.errors"
local json = require "luagent.json"
local fs = require "luagent.fs"
local tar = require "luagent.tar"
local loop = require "luagent.loop"
local image = require "luagent.image"
local runner = require "luagent.sandbox.runner"
local docker_exec = require "luagent.sandbox.docker_exec"

local docker = {}

-- How long a command killed for overrunning may take to end before the
-- container is restarted instead.
local KILL_GRACE = 5

local Session = {}
Session.__index = Session

-- ---- the engine and the names of a session's objects ----

local shared_client

-- The client in opts.engine, a fresh one for opts.docker_host, else the
-- process-wide one for DOCKER_HOST (connected once).
function docker.client(opts)
  if opts and opts.engine then return opts.engine end
  if not (opts and opts.docker_host) and shared_client then return shared_client end
  local client, err = engine.connect(opts and opts.docker_host and {host = opts.docker_host} or nil)
  if not client then return nil, errors.from(err) end
  if not (opts and opts.docker_host) then shared_client = client end
  return client
end

function docker.volume_name(id)
  return "luagent-" .. id .. "-workspace"
end

local function call(client, method, path, body, opts)
  local value, err = client:call(method, path, body, opts)
  if value == nil then return nil, errors.from(err) end
  return value
end

function docker.remove_volume(client, name)
  local done, err = call(client, "DELETE", "/volumes/" .. name, nil, {query = {force = 1}})
  if not done and err.kind ~= "not_found" then return nil, err end
  return true
end

-- Removes a session's container (when given) and its workspace volume; what
-- is already gone counts as removed.
function docker.remove(client, container, id)
  local failure
  if container then
    local done, err = call(client, "DELETE", "/containers/" .. container, nil, {query = {force = 1, v = 1}})
    if not done and err.kind ~= "not_found" then failure = err end
  end
  if id then
    local _, err = docker.remove_volume(client, docker.volume_name(id))
    failure = failure or err
  end
  if failure then return nil, failure end
  return true
end

-- ---- creating ----

local function container_body(spec, volume)
  local limits, mounts = spec.limits, spec.mounts
  local host_config = {
    Memory = limits.memory, MemorySwap = limits.memory,
    NanoCpus = math.floor(limits.cpus * 1e9), PidsLimit = limits.pids,
    NetworkMode = spec.network and "bridge" or "none",
    CapDrop = {"ALL"}, CapAdd = spec.cap_add,
    SecurityOpt = {"no-new-privileges:true"},
    ReadonlyRootfs = not spec.writable_root,
    Tmpfs = {[mounts.tmp.target] = ("rw,noexec,nosuid,nodev,size=%d"):format(mounts.tmp.size)},
    Init = true,
    Mounts = {{Type = "volume", Source = volume, Target = mounts.workspace.target}},
  }
  return {
    Image = spec.image, Cmd = spec.command or {"sleep", "infinity"}, User = spec.user, WorkingDir = spec.workdir,
    Env = json.array(spec.env), Labels = spec.labels, Tty = false, OpenStdin = false,
    NetworkDisabled = not spec.network, HostConfig = host_config,
  }
end

local function volume_body(spec, volume)
  local body = {Name = volume, Labels = spec.labels}
  local size = spec.mounts.workspace.size
  if size then
    body.DriverOpts = {type = "tmpfs", device = "tmpfs", o = ("size=%d,uid=%d,gid=%d"):format(size, spec.uid, spec.gid)}
  end
  return body
end

local function image_missing(err, name)
  if not (err.kind == "not_found" and (err.engine_message or ""):lower():find("image", 1, true)) then return err end
  local fix = name == image.REF and "build it with 'luagent sandbox build'"
    or ("pull or build it first (docker pull %s), or leave image unset to use %s, which 'luagent sandbox build' makes")
      :format(name, image.REF)
  return errors.new("not_found", ("the sandbox image %s is not in the Docker engine: %s (%s)")
    :format(name, fix, err.engine_message), {image = name, engine_message = err.engine_message})
end

function docker.create(client, spec)
  local volume = docker.volume_name(spec.id)
  local created, err = call(client, "POST", "/volumes/create", volume_body(spec, volume))
  if created then
    created, err = call(client, "POST", "/containers/create", container_body(spec, volume),
      {query = {name = "luagent-" .. spec.id}})
  end
  if not created then
    docker.remove(client, nil, spec.id)
    return nil, image_missing(err, spec.image)
  end
  return setmetatable({
    id = spec.id, client = client, container = created.Id, volume = volume, spec = spec,
    workspace = spec.mounts.workspace.target, uid = spec.uid, gid = spec.gid,
    use_runner = spec.runner and client.endpoint.unix_socket ~= nil,
    oom_seen = 0, python_lost = false, removed = false, closing = false,
  }, Session)
end

function Session:start()
  local ok, err = call(self.client, "POST", "/containers/" .. self.container .. "/start")
  if ok and #self.spec.staged > 0 then ok, err = self:put(self.spec.staged) end
  if ok and self.spec.restore then ok, err = self:_restore(self.spec.restore) end
  if not ok then return nil, err end
  return true
end

-- ---- archives ----

function Session:_archive_options(name, extra)
  local path = name == "" and self.workspace or self.workspace .. "/" .. name
  return self.client:options("/containers/" .. self.container .. "/archive" .. engine.query_string({path = path}), extra)
end

function Session:put(entries)
  local ok, err = engine_io.put_archive(self:_archive_options("",
    {entries = entries, uid = self.uid, gid = self.gid, timeout = 3600}))
  if not ok then return nil, errors.wrap(err, "staging into the sandbox failed") end
  return true
end

function Session:read_file(name, opts)
  local content, err = engine_io.read_file(self:_archive_options(name,
    {max_bytes = opts and opts.max_bytes or 64 * 1024 * 1024, timeout = 600}))
  if content == nil then return nil, errors.from(err) end
  return content
end

-- Refuses, and reports, what could land outside host_dir, and what is over
-- the limits (a sandbox can make a terabyte sparse file for free).
function Session:extract(name, host_dir, opts)
  local strip = name == "" and "workspace" or name:match("([^/]+)$")
  local report, err = engine_io.get_archive(self:_archive_options(name,
    {dest = host_dir, strip = strip, timeout = 3600, max_bytes = opts.max_bytes or self.spec.max_extract,
     max_entries = opts.max_entries or self.spec.max_extract_entries}))
  if not report then return nil, errors.from(err) end
  return report
end

function Session:snapshot(host_tar)
  local bytes, err = engine_io.save_archive(self:_archive_options("",
    {path = host_tar, timeout = 3600, max_bytes = self.spec.max_extract}))
  if not bytes then return nil, errors.from(err) end
  return bytes
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

-- ---- commands ----

-- Restarts the container: kills every process in it (the runner and its
-- interpreter too); the workspace volume stays.
function Session:restart()
  local ok, err = call(self.client, "POST", "/containers/" .. self.container .. "/restart", nil, {query = {t = 0}})
  self.python_lost = true
  if ok then self.oom_seen = self:_oom_count() or 0 end
  return ok, err
end

-- The kernel's count of OOM kills in the session's memory cgroup.
function Session:_oom_count()
  local code, out = docker_exec.internal(self, {"/bin/sh", "-c",
    "cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null || cat /sys/fs/cgroup/memory.events"})
  if code ~= 0 or not out then return nil end
  return tonumber(out:match("oom_kill (%d+)"))
end

-- Was this command killed by the kernel's OOM killer? An executor that
-- counts inside the session says so (counted); otherwise the cgroup's count
-- is read and compared with the last one seen.
function Session:_oom_killed(exit_code, timed_out, counted)
  if timed_out or exit_code ~= 137 then return false end
  if counted ~= nil then return counted end
  local count = self:_oom_count()
  if not count then return false end
  local new = count > self.oom_seen
  self.oom_seen = count
  return new
end

-- A command ran past its timeout: its executor kills its process tree; if
-- that cannot be done (the pids cap is exhausted, the executor is stuck) or
-- the command does not end soon after, the container is restarted. Returns
-- true when it restarted.
function Session:_stop_overrun(ex, job)
  if ex:kill(job) and ex:wait(job, KILL_GRACE) then return false end
  ex:abandon(job)
  self:restart()
  return true
end

function Session:_start_executor()
  local ex, err
  if self.use_runner then
    ex, err = runner.start(self)
    -- e.g. no python3 in the image: one Docker exec per command from now on
    if not ex then self.use_runner, self.runner_error = false, err end
  end
  -- a new executor after one died has a fresh interpreter
  if self.executor then self.python_lost = true end
  self.executor = ex or docker_exec.start(self)
end

-- The session's executor, started on first use and again after it died
-- (once, even when several tasks ask at the same time).
function Session:_executor()
  if self.executor and self.executor:alive() then return self.executor end
  if not self.starting then
    self.starting = loop.spawn(function() self:_start_executor() end)
  end
  local starting = self.starting
  starting:wait()
  if self.starting == starting then self.starting = nil end
  return self.executor
end

-- Runs one job to its end: result, nil, the executor and its own view of
-- the result | nil, err.
function Session:_run(job)
  if self.closing then return errors.fail("closed", ("the sandbox session %s is closed"):format(self.id)) end
  local started = loop.now()
  local ex = self:_executor()
  local ok, err = ex:start(job)
  if not ok then return nil, err end
  local ended
  ended, err = ex:wait(job, job.timeout)
  if ended == nil then return nil, err end
  local timed_out, restarted = not ended, false
  if timed_out then restarted = self:_stop_overrun(ex, job) end
  local raw
  raw, err = ex:result(job)
  if not raw then return nil, err end
  local exit_code = raw.exit_code or (timed_out and 137 or -1)
  return {
    stdout = raw.stdout, stderr = raw.stderr, exit_code = exit_code, timed_out = timed_out,
    oom_killed = self:_oom_killed(exit_code, timed_out, raw.oom), truncated = raw.truncated,
    duration = loop.now() - started, stdout_bytes = raw.stdout_bytes, stderr_bytes = raw.stderr_bytes,
    restarted = restarted,
  }, nil, ex, raw
end

function Session:exec(job)
  local result, err = self:_run(job)
  if not result then return nil, err end
  return result
end

function Session:_python(code, opts)
  local result, err, ex, raw = self:_run({python = code, timeout = opts.timeout, max_output = opts.max_output})
  if not result then return nil, err end
  result.persistent = ex.persistent
  if ex.persistent then
    result.state_lost = raw.state_lost or self.python_lost
    -- a restart took the interpreter with it: the next call starts afresh
    self.python_lost = result.restarted
  end
  return result
end

-- One call at a time: each waits for the one before, so its timeout counts
-- only its own running time.
function Session:python(code, opts)
  local before = self.python_last
  local this = loop.spawn(function()
    if before then before:wait() end
    return self:_python(code, opts)
  end)
  self.python_last = this
  return this:wait()
end

-- ---- removal ----

function Session:remove()
  if self.removed then return true end
  if not self.closing then
    self.closing = true
    if self.executor then self.executor:close() end
  end
  local ok, err = docker.remove(self.client, self.container, self.id)
  self.removed = ok == true
  return ok, err
end

return docker
