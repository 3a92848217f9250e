-- luagent.sandbox.docker_exec: the executor that runs each command as its
-- own Docker exec (for images without python3 and for remote engines; about
-- 50 ms a command). It has the executor interface written down in
-- luagent.sandbox.docker; python code runs as `python3 -c`, a fresh
-- interpreter each call (persistent = false).
--
--   docker_exec.start(session) -> executor        (no I/O: there is nothing to start)
--   docker_exec.create(session, body) -> exec id | nil, err   POST /containers/ID/exec
--   docker_exec.internal(session, argv [, seconds]) -> exit_code, output | nil, err
--       a short command the session runs for itself (a kill, reading a counter)
--   docker_exec.START_BODY                        the body of POST /exec/ID/start (attached, no tty)
--
-- Every process of a command carries LUAGENT_EXEC=<token> in its environment
-- (children inherit it), which is how a kill finds the whole tree.
local engine_io = require "luagent.engine_io"
local errors = require "luagent.errors"
local sys = require "luagent.sys"

local docker_exec = {}

docker_exec.START_BODY = '{"Detach":false,"Tty":false}'

-- Kills every process of one command, found by its token (double-forked and
-- setsid'd children too). Stopped first, so a fork bomb cannot outrun the kill.
local KILL_SCRIPT = [[
t="LUAGENT_EXEC=$1"
for round in 1 2 3 4 5 6 7 8 9 10; do
  pids=""
  for f in $(grep -lsxzF "$t" /proc/[0-9]*/environ); do p=${f#/proc/}; pids="$pids ${p%/environ}"; done
  [ -z "$pids" ] && exit 0
  kill -STOP $pids 2>/dev/null
  kill -KILL $pids 2>/dev/null
done
exit 1
]]

-- Runs "$@" with its stdin from a staged file, which it removes first.
local STDIN_FROM_FILE = 'f=$1; shift; exec 0<"$f"; rm -f "$f"; exec "$@"'

local DockerExec = {persistent = false}
DockerExec.__index = DockerExec

function docker_exec.start(session)
  return setmetatable({session = session}, DockerExec)
end

function docker_exec.create(session, body)
  local created, err = session.client:call("POST", "/containers/" .. session.container .. "/exec", body)
  if not created then return nil, errors.from(err) end
  return created.Id
end

local function env_list(env, token)
  local keys = {}
  for k in pairs(env or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  local list = {"LUAGENT_EXEC=" .. token}
  for _, k in ipairs(keys) do list[#list + 1] = k .. "=" .. env[k] end
  return list
end

local function is_not_running(err)
  return err.kind == "conflict" and (err.engine_message or ""):find("not running", 1, true) ~= nil
end

function DockerExec.alive()
  return true
end

function DockerExec:start(job)
  local session = self.session
  local argv = job.python and {"python3", "-c", job.python} or job.argv
  if job.stdin then
    local name = ".luagent/stdin-" .. sys.random_hex(6)
    local ok, err = session:put({{name = name, data = job.stdin}})
    if not ok then return nil, err end
    argv = {"/bin/sh", "-c", STDIN_FROM_FILE, "luagent-stdin", session.workspace .. "/" .. name, table.unpack(argv)}
  end
  job.token = sys.random_hex(8)
  local body = {AttachStdout = true, AttachStderr = true, Tty = false, Cmd = argv,
                Env = env_list(job.env, job.token), WorkingDir = job.cwd}
  local id, err = docker_exec.create(session, body)
  if not id and is_not_running(err) and not job.internal then
    -- the container died (its init was killed): bring it back once
    if session:restart() then id, err = docker_exec.create(session, body) end
  end
  if not id then return nil, err end
  job.exec_id = id
  job.stream = engine_io.exec_start(session.client:options("/exec/" .. id .. "/start",
    {body = docker_exec.START_BODY, max_output = job.max_output}))
  return true
end

function DockerExec.wait(_, job, seconds)
  return job.stream:wait(seconds)
end

function DockerExec:kill(job)
  return docker_exec.internal(self.session, {"/bin/sh", "-c", KILL_SCRIPT, "luagent-kill", job.token}, 10) == 0
end

function DockerExec.abandon(_, job)
  job.stream:abort()
end

function DockerExec:result(job)
  local out, err = job.stream:result()
  if not out then return nil, errors.from(err) end
  local info = self.session.client:call("GET", "/exec/" .. job.exec_id .. "/json")
  local code = info and info.ExitCode
  return {stdout = out.stdout, stderr = out.stderr, exit_code = math.type(code) == "integer" and code or nil,
          truncated = out.truncated, stdout_bytes = out.stdout_bytes, stderr_bytes = out.stderr_bytes}
end

function DockerExec.close() end

function docker_exec.internal(session, argv, seconds)
  local ex, job = docker_exec.start(session), {argv = argv, max_output = 65536, internal = true}
  local ok, err = ex:start(job)
  if not ok then return nil, err end
  if not ex:wait(job, seconds or 10) then
    ex:abandon(job)
    return errors.fail("timeout", "a command the sandbox session runs for itself did not end in time")
  end
  local raw
  raw, err = ex:result(job)
  if not raw then return nil, err end
  return raw.exit_code, raw.stdout .. raw.stderr
end

return docker_exec
