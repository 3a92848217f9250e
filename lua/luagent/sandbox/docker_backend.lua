-- luagent.sandbox.docker_backend: the sandbox backend on a Docker engine. It
-- turns a session spec (built by luagent.sandbox) into a running session: a
-- locked-down container whose PID 1 is the sandbox supervisor, a capped
-- workspace volume, staging, restore, archives, commands, removal. What a
-- backend provides, and what its sessions and their supervisor do, is the
-- contract in lua/meta/sandbox_backend.lua (luagent.SandboxBackend,
-- luagent.SandboxSession, luagent.SandboxSupervisor); the engines a session
-- goes to come from luagent.sandbox.engine_set.
--
-- What talks to the session's supervisor (commands, files, extraction,
-- recovery, the engine going away) is shared by every backend:
-- luagent.sandbox.session, whose hooks this module fills in. Errors: when
-- the engine does not answer, kind "docker_unreachable".
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
local image = require "luagent.image"
local supervisor = require "luagent.sandbox.supervisor"
local recovery = require "luagent.sandbox.recovery"
local sessions = require "luagent.sandbox.session"

local docker = {}

-- Labels of a session's objects a rescue reads (luagent.sandbox.leftovers):
-- what its workspace is and the user commands run as (set here); the run
-- that made it and its save spec are its owner's (luagent.sandbox.owner).
docker.LABELS = {workspace = "luagent.workspace", user = "luagent.user"}
local WORKSPACE_LABEL, USER_LABEL = docker.LABELS.workspace, docker.LABELS.user

---@class luagent.DockerSession: luagent.SessionBase
local Session = sessions.class()
docker.Session = Session -- the class, for the contract check (tests/lua/sandbox_backend_spec.lua)

-- ---- the engine and the names of a session's objects ----

-- A stopping engine closes its socket first (and removes the file) and
-- then stops the containers, while connections it already had may still be
-- answered: the socket's file is asked before the engine is.
function docker.socket_gone(client)
  local endpoint = client.endpoint
  local socket = endpoint.unix_socket
  if socket and not fs.stat(socket) then
    return errors.new("docker_unreachable", ("the Docker engine at %s is gone: there is no socket at %s")
      :format(endpoint.description, socket), {endpoint = endpoint.description})
  end
end

-- A docker_unreachable error when the engine does not answer a ping in 5 s, else nil.
function docker.lost(client)
  local gone = docker.socket_gone(client)
  if gone then return gone end
  local endpoint = client.endpoint
  local ok, err = client:call("GET", "/_ping", nil, {timeout = 5})
  if ok then return nil end
  if err.kind == "docker_unreachable" then return err end
  if err.kind == "timeout" then
    return errors.new("docker_unreachable", ("the Docker engine at %s does not answer: no answer to GET /_ping in 5 s")
      :format(endpoint.description), {endpoint = endpoint.description})
  end
  if err.kind == "network" or err.kind == "connect" then
    return errors.new("docker_unreachable", ("the Docker engine at %s does not answer: %s")
      :format(endpoint.description, err.message), {endpoint = endpoint.description})
  end
  return nil
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

local SKILLS_DIR, SKILLS_SIZE = "/skills", 16 * 1024 * 1024 -- an agent's skills (luagent.skills)

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
    -- /skills: root's (mode 0755), written by the supervisor's skill op only: an agent's skills, read-only to commands
    Tmpfs = {[mounts.tmp.target] = ("rw,noexec,nosuid,nodev,size=%d"):format(mounts.tmp.size),
             [SKILLS_DIR] = ("rw,nosuid,nodev,mode=755,size=%d"):format(SKILLS_SIZE)},
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
    python_lost = false, removed = false, closing = false, restarts = 0, put_via = "archive",
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
    gid = gid, python_lost = false, removed = false, closing = false, restarts = 0, put_via = "archive",
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

-- A file through the engine's archive endpoint (40-180 ms), while serve is not up.
function Session:_read_archive(path, max)
  local content, err = engine_stream.read_file(self:_archive_options(path, {max_bytes = max, timeout = 600}))
  if content == nil then return nil, errors.from(err), "archive" end
  return content, nil, "archive"
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

-- ---- starting ----

-- The container runs (its PID 1 the supervisor): started again when it had
-- stopped, which empties a tmpfs workspace (luagent.sandbox.session: _revive).
function Session:_revive()
  local info, err = call(self.client, "GET", "/containers/" .. self.container .. "/json")
  if not info then return nil, err end
  if info.State and info.State.Running then return {restarted = false} end
  local ok
  ok, err = self:_start_container()
  if not ok then return nil, err end
  local size = self.spec.mounts.workspace.size
  return {restarted = true, reset = size ~= nil and size ~= false, oom_killed = info.State and info.State.OOMKilled,
          reset_why = size and ("sandbox session %s's container stopped (the Docker engine restarted, or it was killed) "
            .. "and its workspace, kept in memory (workspace_size), was emptied with it"):format(self.id) or nil}
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

function Session:_start_supervisor()
  return supervisor.start(self)
end

function Session:_engine_lost()
  return docker.lost(self.client)
end

-- Not tried while the engine's socket is gone (a stopping engine may still
-- answer a connection it had, and remove the container half-way).
function Session:_engine_gone()
  return docker.socket_gone(self.client) or (self.engine_unreachable and docker.lost(self.client))
end

Session.engine_name = "the Docker engine"
Session.workspace_kept_text = "the workspace volume is kept"

function Session:_stopped()
  local info = self.client:call("GET", "/containers/" .. self.container .. "/json")
  if info and info.State and info.State.Running == false then
    return info.State.OOMKilled and recovery.oom_killed_text(self) or "its container stopped"
  end
end

function Session:_remove_objects()
  return docker.remove(self.client, self.container, self.id)
end

function Session:start()
  local ok, err = self:_start_container()
  if not ok then return nil, err end
  self:_serve()
  return self:_stage()
end

-- ---- a warm pool's session ----

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

return docker
