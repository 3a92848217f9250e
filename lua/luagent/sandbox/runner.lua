-- luagent.sandbox.runner: the executor that runs commands through a runner
-- inside the container (sandbox/runner.py, started once per session on one
-- attach connection): a command costs a fork there, not a Docker exec, and
-- python code runs in a persistent interpreter (persistent = true). It has
-- the executor interface written down in luagent.sandbox.docker; the C
-- supervisor that replaces the runner will be one module like this one.
--
--   runner.start(session) -> executor | nil, err   (needs python3 in the image and a local engine socket)
--
-- The runner kills a command's whole process tree itself (on a "kill"
-- message) and counts OOM kills inside the session; its result says so in
-- flags: o = OOM-killed, k = killed on request, r = the interpreter was
-- restarted (its variables are gone).
local engine_io = require "luagent.engine_io"
local errors = require "luagent.errors"
local json = require "luagent.json"
local sys = require "luagent.sys"
local docker_exec = require "luagent.sandbox.docker_exec"

local runner = {}

local Runner = {persistent = true}
Runner.__index = Runner

function runner.start(session)
  local id, err = docker_exec.create(session, {
    AttachStdin = true, AttachStdout = true, AttachStderr = true, Tty = false,
    Cmd = {"python3", "-c", sys.asset("sandbox/runner.py")},
  })
  if not id then return nil, err end
  local client = session.client
  local channel
  channel, err = engine_io.runner{unix_socket = client.endpoint.unix_socket,
    path = "/v" .. client.version .. "/exec/" .. id .. "/start", body = docker_exec.START_BODY}
  if not channel then return nil, errors.from(err) end
  -- the interpreter's processes carry this token, so a kill finds them
  return setmetatable({channel = channel, next_id = 0, kernel_token = sys.random_hex(8)}, Runner)
end

function Runner:alive()
  return self.channel:alive()
end

function Runner:start(job)
  self.next_id = self.next_id + 1
  job.id = self.next_id
  local message, payload
  if job.python then
    message, payload = {op = "python", id = job.id, token = self.kernel_token, size = #job.python}, job.python
  else
    message = {op = "run", id = job.id, argv = job.argv, env = job.env or {}, cwd = job.cwd,
               token = sys.random_hex(8), size = job.stdin and #job.stdin or 0}
    payload = job.stdin
  end
  local ok, err = self.channel:send(job.id, json.encode(message) .. "\n" .. (payload or ""), job.max_output)
  if not ok then return nil, errors.from(err) end
  return true
end

function Runner:wait(job, seconds)
  local ended, err = self.channel:wait(job.id, seconds)
  if ended == nil then return nil, errors.from(err) end
  return ended
end

function Runner:kill(job)
  return self.channel:send(0, json.encode({op = "kill", id = job.id}) .. "\n") == true
end

function Runner.abandon() end -- the restart that follows ends the runner and its commands

function Runner:result(job)
  local r = self.channel:result(job.id)
  local flags = r.flags or ""
  local stderr = r.stderr
  if r.failure then stderr = r.failure .. "\n" .. stderr end
  return {stdout = r.stdout, stderr = stderr, exit_code = r.exit_code, truncated = r.truncated,
          stdout_bytes = r.stdout_bytes, stderr_bytes = r.stderr_bytes,
          oom = flags:find("o", 1, true) ~= nil, state_lost = flags:find("r", 1, true) ~= nil}
end

function Runner:close()
  self.channel:close()
end

return runner
