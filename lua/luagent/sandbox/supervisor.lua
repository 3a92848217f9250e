-- luagent.sandbox.supervisor: the supervisor of a session — the only thing that
-- runs commands in it. The static C supervisor (sandbox/supervisor/, embedded
-- in luagent as the asset build/luagent-supervisor) is PID 1 of the session's
-- container; this module stages it and speaks to `luagent-supervisor serve`,
-- started once per session by a Docker exec, over one hijacked attach
-- (luagent.engine_stream.supervisor). A command costs a fork there, not a Docker
-- exec. The handle's methods are the contract luagent.SandboxSupervisor
-- (lua/meta/sandbox_backend.lua).
--
--   supervisor.HOME, supervisor.PATH        where the binary lives in a session
--   supervisor.entry() -> tar entry          the binary, as a tar entry
--   supervisor.volume() -> name              the volume holding this binary
--   supervisor.ensure(client, image, labels [, refill]) -> true | nil, err
--       that volume exists and holds the binary (filled once per engine)
--   supervisor.missing(err) -> boolean       a container start failed for want of it
--   supervisor.start(session) -> ex | nil, err   serve started (a Docker exec) and ready
--   supervisor.serve_argv(session) -> argv       how serve is started in a session
--   supervisor.over(channel) -> ex               the handle on a serve started another way
--                                                (a Kubernetes exec: luagent.sandbox.k8s_backend)
--
-- The binary reaches a session without a copy per session: one volume per
-- engine and build, named after the binary's sha256, holds it, and every
-- session mounts it read-only at supervisor.HOME (root-owned: nothing a
-- command can write is ever run as root). It is filled once, through a
-- container that never starts, with an archive PUT: the binary under a
-- temporary name, then the link its name is, so a session never sees half
-- of it; a start that finds it missing (the volume was pruned, another
-- process is filling it) fills it and starts again.
--
-- The supervisor owns process trees (a subreaper per command: a command's
-- leftovers are killed when it ends, and counted), timeouts (it kills the
-- tree itself), OOM attribution and python's persistent interpreter. Its
-- result flags: k killed on request, t timed out, o OOM-killed, r the python
-- interpreter was restarted before this call.
local engine = require "luagent.engine_client"
local engine_stream = require "luagent.engine_stream"
local errors = require "luagent.errors"
local sys = require "luagent.sys"

local supervisor = {}

supervisor.HOME = "/run/luagent"
supervisor.PATH = supervisor.HOME .. "/luagent-supervisor"
supervisor.ASSET = "build/luagent-supervisor"
local START_BODY = '{"Detach":false,"Tty":false}'

-- A pack's tar stream is capped on the host too (it comes from inside the
-- sandbox): the file bytes allowed, plus headers and long names per entry.
local function stream_limit(max_bytes, max_entries)
  if max_bytes == 0 or max_entries == 0 then return 0 end
  return max_bytes + max_entries * 12288 + 1024 * 1024
end

local function binary()
  local data = sys.asset(supervisor.ASSET)
  if not data then error("this luagent was built without " .. supervisor.ASSET .. " (make luagent builds it)", 3) end
  return data
end

function supervisor.entry()
  return {name = "luagent-supervisor", data = binary(), mode = 493}
end

local volume_name
function supervisor.volume()
  volume_name = volume_name or "luagent-supervisor-" .. sys.sha256(binary()):sub(1, 16)
  return volume_name
end

-- Fills the volume through a container that never starts (it mounts the
-- volume, creating it when missing).
local function fill(client, image, labels)
  local name = supervisor.volume()
  local created, err = client:call("POST", "/containers/create", {
    Image = image, Entrypoint = {"/nothing"}, Labels = labels, NetworkDisabled = true,
    HostConfig = {NetworkMode = "none", Mounts = {{Type = "volume", Source = name, Target = supervisor.HOME,
      VolumeOptions = {NoCopy = true, Labels = {["luagent.supervisor"] = name}}}}},
  })
  if not created then return nil, errors.from(err) end
  local staged = "luagent-supervisor." .. sys.random_hex(6)
  local ok
  ok, err = engine_stream.put_archive(client:options("/containers/" .. created.Id .. "/archive"
    .. engine.query_string({path = supervisor.HOME}), {uid = 0, gid = 0, timeout = 600, entries = {
      {name = staged, data = binary(), mode = 493}, {name = "luagent-supervisor", symlink = staged}}}))
  client:call("DELETE", "/containers/" .. created.Id, nil, {query = {force = 1}})
  if not ok then return nil, errors.wrap(err, "staging the sandbox supervisor into " .. name .. " failed") end
  return true
end

local ready = setmetatable({}, {__mode = "k"}) -- client -> true once its engine has the volume

function supervisor.ensure(client, image, labels, refill)
  if ready[client] and not refill then return true end
  if not refill then
    local found, err = client:call("GET", "/volumes/" .. supervisor.volume())
    if not found and err.kind ~= "not_found" then return nil, errors.from(err) end
    refill = not found
  end
  if refill then
    local ok, err = fill(client, image, labels)
    if not ok then return nil, err end
  end
  ready[client] = true
  return true
end

function supervisor.missing(err)
  local said = err and err.engine_message or ""
  return said:find(supervisor.PATH, 1, true) ~= nil and said:lower():find("no such file", 1, true) ~= nil
end

---@class luagent.Supervisor: luagent.SandboxSupervisor
local Supervisor = {}
Supervisor.__index = Supervisor
supervisor.Supervisor = Supervisor -- the class, for the contract check

-- serve UID:GID, and where the engine cannot cap the session's processes
-- (gVisor: the host's pids cgroup cannot count them; a Kubernetes pod: the
-- Pod API has no pids cap) the pids cap as RLIMIT_NPROC of the command user.
function supervisor.serve_argv(session)
  local argv = {supervisor.PATH, "serve", ("%d:%d"):format(session.uid, session.gid)}
  if (session.spec.gvisor or session.nproc_cap) and session.spec.limits then
    argv[4] = tostring(session.spec.limits.pids)
  end
  if session.drop_env then
    argv[4], argv[5] = argv[4] or "0", session.drop_env
  end
  return argv
end
local serve_argv = supervisor.serve_argv

-- The handle on a serve whose channel is open (engine_stream.supervisor's).
function supervisor.over(channel)
  return setmetatable({channel = channel, next_id = 0}, Supervisor)
end

function supervisor.start(session)
  local client = session.client
  local created, err = client:call("POST", "/containers/" .. session.container .. "/exec", {
    AttachStdin = true, AttachStdout = true, AttachStderr = true, Tty = false, User = "0",
    Cmd = serve_argv(session),
  })
  if not created then return nil, errors.from(err) end
  local channel
  channel, err = engine_stream.supervisor(client:options("/exec/" .. created.Id .. "/start", {body = START_BODY}))
  if not channel then return nil, errors.from(err) end
  return setmetatable({channel = channel, next_id = 0, exec_id = created.Id}, Supervisor)
end

function Supervisor:alive()
  return self.channel:alive()
end

local function sorted_env(env)
  local keys, list = {}, {}
  for k in pairs(env or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do list[#list + 1] = k .. "=" .. env[k] end
  return list
end

-- The protocol's operations, declared once (src/core/supervisor_ops.def):
-- {NAME = {answered, fields = {name, ...}, required = {name = true}}}.
local OPS = engine_stream.SUPERVISOR_OPS

-- The channel options of a job (what the host keeps of its output):
--   a pack streamed to its reader (job.window: a fork) is paced by the reader;
--   another pack goes into an extraction (dest, strip) or a file (save);
--   read keeps the file (max_bytes); put and watch answer in a line;
--   the rest keep max_output per stream.
local function options(op, job)
  if op == "pack" and job.window then return {window = job.window, max_output = 4 * job.window} end
  if op == "pack" then
    local limit = stream_limit(job.max_bytes, job.max_entries)
    return job.save and {save = {path = job.save, limit = limit}}
      or {extract = {dest = job.dest, strip = job.strip, max_bytes = job.max_bytes,
                     max_entries = job.max_entries, limit = limit}}
  end
  if op == "read" then return {max_output = job.max_bytes + 1} end
  if op == "put" or op == "watch" then return {max_output = 4096} end
  return {max_output = job.max_output}
end

-- The request's fields: the job's, as the op declares them. A job's env is
-- {K = "v"} (sent sorted, "K=v"); a spawn's stdin = true keeps its stdin open.
local function request(op, job)
  local fields = {}
  for _, name in ipairs(OPS[op].fields) do fields[name] = job[name] end
  if fields.env then fields.env = sorted_env(fields.env) end
  if job.stdin == true then fields.stdin, fields.keep_stdin = nil, true end
  if op ~= "spawn" or not job.tty then fields.tty, fields.cols, fields.rows = nil, nil, nil end
  return fields, options(op, job)
end

-- Sends job as op (an answered op of OPS); sets job.id.
function Supervisor:send(op, job)
  self.next_id = self.next_id + 1
  job.id = self.next_id
  local fields, opts = request(op, job)
  local ok, err = self.channel:send(op, job.id, fields, opts)
  if not ok then return nil, errors.from(err) end
  return true
end

-- true (ended) | false (seconds passed; with on_output: or output came) | nil, err (gone)
function Supervisor:wait(job, seconds, on_output)
  local ended, err = self.channel:wait(job.id, seconds, on_output)
  if ended == nil then return nil, errors.from(err) end
  return ended
end

-- What job printed since the last fresh (the first call starts keeping it).
function Supervisor:fresh(job)
  return self.channel:fresh(job.id)
end

function Supervisor:take(job)
  return self.channel:take(job.id)
end

function Supervisor:kill(job)
  local ok, err = self.channel:send("kill", job.id)
  if not ok then return nil, errors.from(err) end
  return true
end

function Supervisor:resize(job, cols, rows)
  local ok, err = self.channel:send("resize", job.id, {cols = cols, rows = rows})
  if not ok then return nil, errors.from(err) end
  return true
end

function Supervisor:signal(job, signo)
  local ok, err = self.channel:send("signal", job.id, {signal = signo})
  if not ok then return nil, errors.from(err) end
  return true
end

-- luagent.SupervisorResult (lua/meta/sandbox_backend.lua)
function Supervisor:result(job)
  local r = self.channel:result(job.id)
  if r.failure then r.stderr = r.failure .. "\n" .. r.stderr end
  r.state_lost = (r.flags or ""):find("r", 1, true) ~= nil
  return r
end

-- The mark of the last result that came, any command's (sandbox/supervisor/watch.h):
-- the change generation of the folder a `watch` named, or nil (none, or unknown).
function Supervisor:mark()
  return self.channel:mark()
end

function Supervisor:close()
  self.channel:close()
end

return supervisor
