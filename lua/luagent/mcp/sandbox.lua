-- luagent.mcp.sandbox: an MCP server as a process inside a sandbox
-- (`command = {...}, sandbox = box`), so that it acts on /workspace with the
-- sandbox's limits (memory, pids, CPU, no network, uid 1000, killed with the
-- box); it speaks over its stdin and stdout like a host one
-- (luagent.mcp.stream), through box:spawn's process handle with an open
-- stdin (process:write, process:close_stdin).
--
--   mcp_sandbox.open(spec, hooks) -> transport | nil, err
--     spec: command (argv, run inside the sandbox), sandbox (the box), env
--     (refused if it holds an API key, as box:spawn refuses it), cwd (default
--     the box's: /workspace)
-- The transport is luagent.mcp.stream's: request, send, fail_pending, close.
--
-- The server's program must be in the sandbox: the image's own (node and
-- python3 are in luagent's image), or staged into the workspace with the
-- box's manifest, e.g. an npm package installed on the host:
--   sandbox.open{manifest = {[".mcp/node_modules"] = sandbox.dir("mcp/node_modules")}}
--   tools.mcp{sandbox = box, command = {"node",
--     "/workspace/.mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/workspace"}}
-- (the sandbox has no network: npx cannot download there).
local errors = require "luagent.errors"
local stream = require "luagent.mcp.stream"

local mcp_sandbox = {}

local READ_WAIT = 3600 -- seconds a read waits for output (it returns sooner at the end)

local signal_name = require("luagent.sys").signal_name -- the one table of names, C's

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
  if r.exit_code > 128 and r.exit_code <= 128 + 64 then
    local signo = r.exit_code - 128
    return ("was killed by signal %s"):format(signal_name(signo) or tostring(signo))
  end
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

function mcp_sandbox.open(spec, hooks)
  local proc, err = spec.sandbox:spawn(spec.command, {env = spec.env, cwd = spec.cwd, stdin = true})
  if not proc then
    return nil, errors.wrap(err, ("cannot start %s in the sandbox (command %s)"):format(hooks.label, spec.command[1]))
  end
  return stream.new(setmetatable({proc = proc}, BoxProcess), hooks)
end

return mcp_sandbox
