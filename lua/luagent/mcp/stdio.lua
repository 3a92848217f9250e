-- luagent.mcp.stdio: an MCP server as a host process (`command = {...}`),
-- speaking over its stdin and stdout (luagent.mcp.stream), in a process
-- group of its own so that the kill reaches whatever it started (npx and
-- its node) and a Ctrl-C on the terminal reaches luagent alone, which then
-- ends it (the run's exit hook: luagent.mcp).
--
--   stdio.open(spec, hooks) -> transport | nil, err
--     spec: command (argv), env (added to a small safe environment: the
--     host's API keys are not passed on), cwd, label
--     err: kind not_found (the program), permission, io — naming the server
-- The transport is luagent.mcp.stream's: request, send, fail_pending, close;
-- and pid() for tests and diagnostics.
local errors = require "luagent.errors"
local sched = require "luagent.sched"
local process = require "luagent.process"
local stream = require "luagent.mcp.stream"

local stdio = {}

-- What a server inherits from luagent's environment unless env says more
-- (as the reference SDKs do): enough to find programs and a home folder.
stdio.INHERITED_ENV = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"}

local signal_name = require("luagent.sys").signal_name -- the one table of names, C's

local function environment(extra)
  local host, env = process.environ(), {}
  for _, name in ipairs(stdio.INHERITED_ENV) do env[name] = host[name] end
  for name, value in pairs(extra or {}) do env[name] = tostring(value) end
  return env
end

-- ---- the io of luagent.mcp.stream, for a host process ----

local HostProcess = {}
HostProcess.__index = HostProcess

function HostProcess:write(data)
  return self.proc:write(data)
end

function HostProcess:pump(on_stdout, on_stderr)
  local proc = self.proc
  local reader <close> = sched.spawn(function()
    while true do
      local data = proc:read("stderr")
      if not data then return end
      on_stderr(data)
    end
  end)
  while true do
    local data = proc:read("stdout")
    if not data then break end
    if on_stdout(data) == false then return "stopped" end
  end
  -- stdout ended: the server is ending. Its status, then (its whole group
  -- gone, so nobody holds the pipe) the rest of its stderr.
  self:_ended(2)
  reader:wait()
  return "ended"
end

-- Waits up to `grace` seconds for the end, then kills the group; notes the status.
function HostProcess:_ended(grace)
  local proc = self.proc
  local code, signal = proc:wait(grace)
  if not code then
    proc:kill("KILL")
    code, signal = proc:wait(5)
  end
  proc:kill("KILL") -- whatever it started and left behind
  self.code, self.signal = code, signal
end

function HostProcess:status()
  if self.signal then
    return ("was killed by signal %s"):format(signal_name(self.signal) or tostring(self.signal))
  end
  if self.code then return ("exited with status %d"):format(self.code) end
  return "stopped answering"
end

function HostProcess:kill()
  self.proc:kill("KILL")
end

function HostProcess:close(grace, on_stderr)
  local proc = self.proc
  proc:close_stdin()
  if grace > 0 then
    local code = proc:wait(grace)
    if not code then proc:kill("TERM") end
  end
  self:_ended(grace > 0 and 1 or 0)
  while true do
    local data = proc:read("stderr")
    if not data then break end
    on_stderr(data)
  end
  proc:close()
end

-- ---- opening ----

function stdio.open(spec, hooks)
  local proc, err = process.spawn{argv = spec.command, env = environment(spec.env), cwd = spec.cwd, stdin = "pipe",
                                  stdout = "pipe", stderr = "pipe", new_group = true}
  if not proc then
    return nil, errors.wrap(err, ("cannot start %s (command %s)"):format(hooks.label, spec.command[1]))
  end
  local s = stream.new(setmetatable({proc = proc}, HostProcess), hooks)
  function s.pid() return proc:pid() end
  return s
end

return stdio
