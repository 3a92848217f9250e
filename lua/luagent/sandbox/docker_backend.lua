-- luagent.sandbox.docker_backend: the sandbox backend on a Docker engine. It
-- turns a session spec (built by luagent.sandbox) into a running session: a
-- locked-down container whose PID 1 is the sandbox supervisor, a capped
-- workspace volume, staging, restore, archives, commands, removal. What a
-- backend provides, and what its sessions and their supervisor do, is the
-- contract in lua/meta/sandbox_backend.lua (luagent.SandboxBackend,
-- luagent.SandboxSession, luagent.SandboxSupervisor); the engines a session
-- goes to come from luagent.sandbox.engine_set.
--
-- Every error is a luagent.errors value; when the supervisor or the container
-- dies under a call, the call returns kind "sandbox_restarted" after the
-- session came back, and when the engine does not answer, kind
-- "docker_unreachable" at once (luagent.sandbox.recovery).
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
--
-- docker.adopt(client, info, {max_extract, max_extract_entries}) makes a
-- session of a leftover container (its inspect `info`; started again if it
-- stopped), for the rescue of its outputs: extract, exec; session:forget()
-- lets go of it, leaving it there.
local engine = require "luagent.engine_client"
local engine_stream = require "luagent.engine_stream"
local errors = require "luagent.errors"
local json = require "luagent.json"
local fs = require "luagent.fs"
local tar = require "luagent.tar"
local sched = require "luagent.sched"
local image = require "luagent.image"
local supervisor = require "luagent.sandbox.supervisor"
local command = require "luagent.sandbox.command"
local recovery = require "luagent.sandbox.recovery"
local packing = require "luagent.sandbox.packing"
local process = require "luagent.sandbox.process"
local owner = require "luagent.sandbox.owner"

local docker = {}

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
-- Labels of a session's objects a rescue reads (luagent.sandbox.leftovers):
-- what its workspace is and the user commands run as (set here); the run
-- that made it and its save spec are its owner's (luagent.sandbox.owner).
docker.LABELS = {workspace = "luagent.workspace", user = "luagent.user"}
local WORKSPACE_LABEL, USER_LABEL = docker.LABELS.workspace, docker.LABELS.user
local SAVE_FROM = owner.LABELS.save_from
-- Extraction and snapshots: the most a pack may run.
local PACK_TIMEOUT = 3600

---@class luagent.DockerSession: luagent.SandboxSession
local Session = {}
Session.__index = Session
docker.Session = Session -- the class, for the contract check (tests/lua/sandbox_backend_spec.lua)

-- ---- the engine and the names of a session's objects ----

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

-- The workspace: a tmpfs volume of spec size (the kernel caps it: a writer
-- gets ENOSPC), or a disk volume without a cap when size is false. Both are
-- made by the engine with the container, labelled like it.
local function workspace_mount(spec, volume)
  local ws = spec.mounts.workspace
  local options = {Labels = spec.labels}
  if ws.size then
    options.DriverConfig = {Name = "local", Options = {type = "tmpfs", device = "tmpfs",
      o = ("size=%d,uid=%d,gid=%d,mode=0755,nosuid,nodev"):format(ws.size, spec.uid, spec.gid)}}
  end
  return {Type = "volume", Source = volume, Target = ws.target, VolumeOptions = options}
end

-- The container: the supervisor is PID 1 as uid 0 with only the four
-- capabilities it needs (sandbox/supervisor/DESIGN.md), from its volume
-- mounted read-only; commands run under it as spec.uid:gid with none. No
-- network, caps on memory (files in RAM included: see luagent.sandbox), CPU
-- and pids, a read-only root; spec.runtime (runsc: gVisor) when one is named.
local function container_body(spec, volume)
  local limits, mounts = spec.limits, spec.mounts
  local host_config = {
    Memory = limits.memory, MemorySwap = limits.memory,
    -- gVisor: the host's pids cap would count the sandbox kernel's own threads (hitting it
    -- kills the whole sandbox); the supervisor caps commands with RLIMIT_NPROC instead
    NanoCpus = math.floor(limits.cpus * 1e9), PidsLimit = not spec.gvisor and limits.pids or nil,
    NetworkMode = spec.network and "bridge" or "none",
    CapDrop = {"ALL"}, CapAdd = {"SETUID", "SETGID", "KILL", "SETPCAP"},
    SecurityOpt = {"no-new-privileges:true"},
    ReadonlyRootfs = not spec.writable_root,
    Tmpfs = {[mounts.tmp.target] = ("rw,noexec,nosuid,nodev,size=%d"):format(mounts.tmp.size)},
    Init = false, Runtime = spec.runtime, -- nil: the engine's default runtime
    Mounts = {workspace_mount(spec, volume),
              {Type = "volume", Source = supervisor.volume(), Target = supervisor.HOME, ReadOnly = true,
               VolumeOptions = {NoCopy = true}}},
  }
  return {
    Image = spec.image, Entrypoint = {supervisor.PATH, "init"}, Cmd = json.array({}), User = "0:0",
    WorkingDir = spec.workdir, Env = json.array(spec.env), Labels = spec.labels, Tty = false, OpenStdin = false,
    NetworkDisabled = not spec.network, HostConfig = host_config,
  }
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
  spec.labels[WORKSPACE_LABEL] = spec.mounts.workspace.size and "memory" or "disk"
  spec.labels[USER_LABEL] = ("%d:%d"):format(spec.uid, spec.gid)
  local created, err = supervisor.ensure(client, spec.image, spec.labels)
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
    python_lost = false, removed = false, closing = false, restarts = 0,
  }, Session)
end

-- A leftover's session, made from its container's inspect: what a rescue
-- needs (its workspace, its user; nothing is staged again).
function docker.adopt(client, info, limits)
  local labels = info.Config and info.Config.Labels or {}
  local id = labels["luagent.session"]
  local volume = docker.volume_name(id)
  local target = "/workspace"
  for _, m in ipairs(info.Mounts or {}) do
    if m.Name == volume then target = m.Destination end
  end
  local uid, gid = (labels[USER_LABEL] or "1000:1000"):match("^(%d+):(%d+)$")
  uid, gid = tonumber(uid) or 1000, tonumber(gid) or 1000
  local spec = {id = id, image = info.Image, labels = labels, uid = uid, gid = gid, staged = {}, engine_grace = 0,
                mounts = {workspace = {target = target, size = labels[WORKSPACE_LABEL] ~= "disk"}},
                max_extract = limits.max_extract, max_extract_entries = limits.max_extract_entries}
  local session = setmetatable({
    id = id, client = client, container = info.Id, volume = volume, spec = spec, workspace = target, uid = uid,
    gid = gid, python_lost = false, removed = false, closing = false, restarts = 0,
  }, Session)
  session:_serve(true)
  return session
end

-- Does the leftover's workspace hold what its commands wrote? Not when it
-- was in memory and its container stopped.
function docker.workspace_kept(info)
  local labels = info.Config and info.Config.Labels or {}
  return labels[WORKSPACE_LABEL] == "disk" or (info.State and info.State.Running) == true
end

-- ---- archives ----

function Session:_archive_options(path, extra)
  return self.client:options("/containers/" .. self.container .. "/archive" .. engine.query_string({path = path}), extra)
end

function Session:_workspace_path(name)
  return name == "" and self.workspace or self.workspace .. "/" .. name
end

-- (archive_writes counts them: they bypass serve, whose watch may not see
-- them, e.g. under gVisor; the outputs mirror lists again after one)
function Session:put(entries)
  self.archive_writes = (self.archive_writes or 0) + 1
  local ok, err = engine_stream.put_archive(self:_archive_options(self.workspace,
    {entries = entries, uid = self.uid, gid = self.gid, timeout = 3600}))
  self.archive_writes = self.archive_writes + 1 -- a listing made while it wrote is not the last
  if not ok then return nil, errors.wrap(err, "staging into the sandbox failed") end
  return true
end

-- ---- one file: through the supervisor (a round trip), or the engine's archive ----

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
  if not (max >= 1 and self:_file_supervisor()) then
    local content, err = engine_stream.read_file(self:_archive_options(self:_workspace_path(name),
      {max_bytes = max, timeout = 600}))
    if content == nil then return nil, errors.from(err), "archive" end
    return content, nil, "archive"
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
  if #data > PUT_MAX or not self:_file_supervisor() then
    local ok, err = self:put({{name = name, data = data, mode = mode}})
    return ok, err, "archive"
  end
  local path = self:_workspace_path(name)
  local raw, err = self:_file_op("put", {path = path, data = data, mode = mode})
  if not raw then return nil, err, "supervisor" end
  if raw.exit_code ~= 0 or raw.failure then
    return nil, file_error(raw.failure or raw.stderr, "staging " .. name .. " into the sandbox failed"), "supervisor"
  end
  return true, nil, "supervisor"
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

-- ---- starting ----

-- The container runs (its PID 1 the supervisor): true, `fresh` when it was
-- started now (a tmpfs workspace is then empty), and then the State the
-- engine reported of the stopped container (OOMKilled) | nil, err.
function Session:_run_container()
  local info, err = call(self.client, "GET", "/containers/" .. self.container .. "/json")
  if not info then return nil, err end
  if info.State and info.State.Running then return true, false end
  local ok
  ok, err = self:_start_container()
  if not ok then return nil, err end
  return true, true, info.State
end

-- Starts the container; when its supervisor volume lacks the binary (it
-- was pruned, or another process is filling it), fills it and tries again.
function Session:_start_container()
  local path = "/containers/" .. self.container .. "/start"
  local ok, err = call(self.client, "POST", path)
  if not ok and supervisor.missing(err) then
    ok, err = supervisor.ensure(self.client, self.spec.image, self.spec.labels, true)
    if ok then ok, err = call(self.client, "POST", path) end
  end
  return ok, err
end

-- Starts serve in the background: the first command waits for it (an exec
-- attach costs a round trip, which staging or the recipe's own work hides).
function Session:_serve(run_container)
  self.serving = sched.spawn(function()
    if run_container then
      local ok, err = self:_run_container()
      if not ok then return nil, err end
    end
    local ex, err = supervisor.start(self)
    if ex and self.closing then ex:close() end
    return ex, err
  end)
end

function Session:start()
  local ok, err = self:_start_container()
  if not ok then return nil, err end
  self:_serve()
  return self:_stage()
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
-- 40-70); a bigger one, a restore, or an image without tar take the PUT.
local QUICK_STAGE = 1024 * 1024

function Session:_quick_stage(staged)
  local bytes = 0
  for _, e in ipairs(staged) do
    bytes = bytes + (e.data and #e.data or e.file and (fs.stat(e.file) or {}).size or 0)
  end
  if bytes > QUICK_STAGE then return false end
  local dir = fs.temp_dir("luagent-stage")
  local ok = dir and tar.write(dir .. "/stage.tar", staged, {uid = self.uid, gid = self.gid})
  local data = ok and fs.read(dir .. "/stage.tar")
  if dir then fs.remove(dir) end
  local r = data and self:exec({argv = {"tar", "-x", "-f", "-", "-C", self.workspace}, env = {}, cwd = self.workspace,
                                stdin = data, timeout = 60, max_output = 65536})
  return r and r.exit_code == 0
end

function Session:stage(staged, restore)
  self.spec.staged, self.spec.restore = staged, restore
  if not restore and #staged > 0 and self:_quick_stage(staged) then return true end
  return self:_stage()
end

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
-- Under gVisor the container is asked too, every CONTAINER_CHECK seconds:
-- runsc's exec does not see its sandbox die, so serve's stream can outlive a
-- killed container (a command in flight waited out its timeout + BACKSTOP);
-- a container the engine OOM-killed (gVisor has no memory cgroup inside: a
-- command over the cap ends the whole sandbox) is said so.
function Session:_wait_answering(ex, job, limit)
  local deadline = limit and sched.now() + limit
  local missed, next_ping = 0, sched.now() + HEARTBEAT
  local beat = self.spec.gvisor and CONTAINER_CHECK or HEARTBEAT
  while true do
    local slice = deadline and math.min(beat, deadline - sched.now()) or beat
    if slice <= 0 then return false end
    local ended, err = ex:wait(job, slice)
    if ended ~= false then return ended, err end
    if self.spec.gvisor then
      local info = self.client:call("GET", "/containers/" .. self.container .. "/json")
      if info and info.State and info.State.Running == false then
        return nil, info.State.OOMKilled and recovery.oom_killed_text(self) or "its container stopped"
      end
    end
    if sched.now() >= next_ping then
      next_ping = sched.now() + HEARTBEAT
      local lost = not (deadline and sched.now() >= deadline) and recovery.engine_lost(self.client)
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
  local raw, duration = self:_run("python", {code = code, timeout = opts.timeout, max_output = opts.max_output})
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
  io.stderr:write(("luagent: the Docker engine answers again after %.1f s\n"):format(sched.now() - started))
  return true
end

-- A pack reads and changes nothing in the session: after a restart (the
-- engine came back) it runs again.
function Session:_pack(job, what)
  local raw, err = self:_run("pack", job)
  if not raw and err.kind == "docker_unreachable" and self:_wait_engine(err, what) then
    raw, err = self:_run("pack", job)
  end
  if not raw and err.kind == "sandbox_restarted" then raw, err = self:_run("pack", job) end
  if raw then self.engine_given_up = nil end
  return raw, err
end

-- What could not be read for want of the engine keeps a session that has
-- outputs to save (see the top): a rescue brings them home.
function Session:_unread(err)
  if err.kind == "docker_unreachable" and self.spec.labels[SAVE_FROM] then self.unread = true end
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

-- Lets go of the session (its supervisor's connection); its container and
-- volume stay.
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
    return errors.fail("docker_unreachable", "it is kept, for the rescue of the outputs that could not be read when "
      .. "the Docker engine went away (by the next luagent run on this engine, or 'luagent sandbox prune')",
      {session = self.id, kept = true})
  end
  local gone = recovery.socket_gone(self.client)
    or (self.engine_unreachable and recovery.engine_lost(self.client))
  if gone then return nil, gone end
  local ok, err = docker.remove(self.client, self.container, self.id)
  self.removed = ok == true
  return ok, err
end

return docker
