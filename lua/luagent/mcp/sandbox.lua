-- luagent.mcp.sandbox: an MCP server as a process inside a sandbox
-- (`command = {...}, sandbox = box`), so that it acts on /workspace with the
-- sandbox's limits; it speaks over its stdin and stdout like a host one
-- (luagent.mcp.stream), through box:spawn's process handle.
--
--   mcp_sandbox.open(spec, hooks) -> transport | nil, err
--     spec: command (argv), sandbox (the box), env (refused if it holds an
--     API key, as box:spawn refuses it), cwd (default the box's: /workspace)
--
-- What it needs of box:spawn's process: read([seconds]) -> stdout, stderr
-- (waiting for output or the end), wait([seconds]) -> result, signal, kill,
-- close — and, to stream requests, write(data) and close_stdin(). A process
-- without the last two (the supervisor gives a spawn its stdin once, at
-- start) makes open() a clear error instead: the server is stopped at once.
local errors = require "luagent.errors"
local stream = require "luagent.mcp.stream"

local mcp_sandbox = {}

local READ_WAIT = 3600 -- seconds a read waits for output (it returns sooner at the end)

local BoxProcess = {}
BoxProcess.__index = BoxProcess

function BoxProcess:write(data)
  return self.proc:write(data)
end

-- Notes the process's result once it ended; true when it has.
function BoxProcess:_ended(seconds)
  local result = self.proc:wait(seconds)
  if result then self.result = result end
  return result ~= nil
end

function BoxProcess:pump(on_stdout, on_stderr)
  while true do
    local out, err = self.proc:read(READ_WAIT)
    if out == nil then -- the sandbox restarted or closed under it
      self.failure = err
      return "ended"
    end
    if err ~= "" then on_stderr(err) end
    if out ~= "" and on_stdout(out) == false then return "stopped" end
    if out == "" and err == "" and self:_ended(0.05) then
      if self.result.stderr ~= "" then on_stderr(self.result.stderr) end
      if self.result.stdout ~= "" then on_stdout(self.result.stdout) end
      return "ended"
    end
  end
end

function BoxProcess:status()
  local r = self.result
  if self.failure then return "is gone: " .. tostring(self.failure.message or self.failure) end
  if not r then return "stopped answering" end
  if r.oom_killed then return "was killed for using more memory than the sandbox has" end
  if r.timed_out then return "was stopped at its timeout" end
  return ("exited with status %d"):format(r.exit_code)
end

function BoxProcess:kill()
  self.proc:kill()
end

function BoxProcess:close(grace, on_stderr)
  local proc = self.proc
  proc:close_stdin()
  if not (grace > 0 and self:_ended(grace)) then
    proc:signal("TERM")
    if not self:_ended(1) then
      proc:kill()
      self:_ended(5)
    end
  end
  if self.result and self.result.stderr ~= "" then on_stderr(self.result.stderr) end
  proc:close()
end

-- ---- opening ----

local function missing_streams(proc)
  return type(proc.write) ~= "function" or type(proc.close_stdin) ~= "function"
end

function mcp_sandbox.open(spec, hooks)
  local box = spec.sandbox
  local proc, err = box:spawn(spec.command, {env = spec.env, cwd = spec.cwd})
  if not proc then
    return nil, errors.wrap(err, ("cannot start %s in the sandbox (command %s)"):format(hooks.label, spec.command[1]))
  end
  if missing_streams(proc) then
    proc:close()
    return errors.fail("config", ("tools.mcp: %s cannot run inside the sandbox yet: an MCP server reads requests on "
      .. "its stdin for as long as it runs, and box:spawn gives a process its stdin once, at start (it needs "
      .. "process:write(data) and process:close_stdin()); run it on the host meanwhile (command without sandbox)")
      :format(hooks.label), {server = hooks.server})
  end
  return stream.new(setmetatable({proc = proc}, BoxProcess), hooks)
end

return mcp_sandbox
