-- luagent.sandbox.supervisor: the executor of a session — the only thing that
-- runs commands in it. The static C supervisor (sandbox/supervisor/, embedded
-- in luagent as the asset build/luagent-supervisor) is PID 1 of the session's
-- container; this module stages it and speaks to `luagent-supervisor serve`,
-- started once per session by a Docker exec, over one hijacked attach
-- (luagent.engine_io.supervisor). A command costs a fork there, not a Docker
-- exec. The executor interface is written at the top of luagent.sandbox.docker.
--
--   supervisor.HOME, supervisor.PATH        where the binary lives in a session
--   supervisor.entry() -> tar entry          the binary, for the PUT before start
--   supervisor.start(session) -> ex | nil, err   serve started and ready
--
-- The supervisor owns process trees (a subreaper per command: a command's
-- leftovers are killed when it ends, and counted), timeouts (it kills the
-- tree itself), OOM attribution and python's persistent interpreter. Its
-- result flags: k killed on request, t timed out, o OOM-killed, r the python
-- interpreter was restarted before this call.
local engine_io = require "luagent.engine_io"
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

function supervisor.entry()
  local binary = sys.asset(supervisor.ASSET)
  if not binary then error("this luagent was built without " .. supervisor.ASSET .. " (make luagent builds it)", 2) end
  return {name = "luagent-supervisor", data = binary, mode = 493}
end

local Executor = {}
Executor.__index = Executor

function supervisor.start(session)
  local client = session.client
  local created, err = client:call("POST", "/containers/" .. session.container .. "/exec", {
    AttachStdin = true, AttachStdout = true, AttachStderr = true, Tty = false, User = "0",
    Cmd = {supervisor.PATH, "serve", ("%d:%d"):format(session.uid, session.gid)},
  })
  if not created then return nil, errors.from(err) end
  local channel
  channel, err = engine_io.supervisor{unix_socket = client.endpoint.unix_socket,
    path = "/v" .. client.version .. "/exec/" .. created.Id .. "/start", body = START_BODY}
  if not channel then return nil, errors.from(err) end
  return setmetatable({channel = channel, next_id = 0, exec_id = created.Id}, Executor)
end

function Executor:alive()
  return self.channel:alive()
end

local function sorted_env(env)
  local keys, list = {}, {}
  for k in pairs(env or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do list[#list + 1] = k .. "=" .. env[k] end
  return list
end

-- The request fields and channel options of a job:
--   {argv, env = {K = "v"}, cwd, stdin, timeout, max_output} (run, spawn)
--   {code, timeout, max_output} (python)
--   {path, max_bytes, max_entries, dest, strip | save} (pack)
local function request(op, job)
  if op == "python" then return {code = job.code, timeout = job.timeout}, {max_output = job.max_output} end
  if op == "pack" then
    local limit = stream_limit(job.max_bytes, job.max_entries)
    local sink = job.save and {save = {path = job.save, limit = limit}}
      or {extract = {dest = job.dest, strip = job.strip, max_bytes = job.max_bytes,
                     max_entries = job.max_entries, limit = limit}}
    return {path = job.path, max_bytes = job.max_bytes, max_entries = job.max_entries}, sink
  end
  return {argv = job.argv, env = sorted_env(job.env), cwd = job.cwd, stdin = job.stdin, timeout = job.timeout},
         {max_output = job.max_output}
end

-- Sends job as op ("run", "spawn", "python" or "pack"); sets job.id.
function Executor:send(op, job)
  self.next_id = self.next_id + 1
  job.id = self.next_id
  local fields, opts = request(op, job)
  local ok, err = self.channel:send(op, job.id, fields, opts)
  if not ok then return nil, errors.from(err) end
  return true
end

-- true (ended) | false (seconds passed; with on_output: or output came) | nil, err (gone)
function Executor:wait(job, seconds, on_output)
  local ended, err = self.channel:wait(job.id, seconds, on_output)
  if ended == nil then return nil, errors.from(err) end
  return ended
end

function Executor:take(job)
  return self.channel:take(job.id)
end

function Executor:kill(job)
  local ok, err = self.channel:send("kill", job.id)
  if not ok then return nil, errors.from(err) end
  return true
end

function Executor:signal(job, signo)
  local ok, err = self.channel:send("signal", job.id, {signal = signo})
  if not ok then return nil, errors.from(err) end
  return true
end

-- {stdout, stderr, exit_code, timed_out, oom_killed, killed, truncated,
--  stdout_bytes, stderr_bytes, state_lost, failure, report | saved | sink_error}
function Executor:result(job)
  local r = self.channel:result(job.id)
  if r.failure then r.stderr = r.failure .. "\n" .. r.stderr end
  r.state_lost = (r.flags or ""):find("r", 1, true) ~= nil
  return r
end

function Executor:close()
  self.channel:close()
end

return supervisor
