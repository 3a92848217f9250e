-- needs: docker
-- tools.mcp{command = ..., sandbox = box}: an MCP server inside the sandbox.
-- box:spawn gives a process its stdin once, at start (the supervisor takes a
-- spawn's stdin in its request, with no later writes), so no MCP server can
-- run there yet: tools.mcp says so plainly and stops the process it started.
local t = require "helper"
local sandbox = require "luagent.sandbox"
local tools = require "luagent.tools"

local box = assert(sandbox.open{memory = "256m", pids = 64, timeout = 30})

-- Prints a line when it starts and another for each line it reads, then the end.
local SERVER = [[
import sys
print("started", file=sys.stderr, flush=True)
for line in sys.stdin:
    print("read", len(line), file=sys.stderr, flush=True)
print("stdin ended", file=sys.stderr, flush=True)
]]

t.test("a server in the sandbox: one clear error saying what box:spawn lacks; the process is stopped", function()
  local list, err = tools.mcp{command = {"python3", "-c", SERVER}, sandbox = box, name = "boxed"}
  t.eq(list, nil)
  t.eq(err.kind, "config")
  t.match(err.message, "^tools.mcp: the MCP server 'boxed' cannot run inside the sandbox yet: ")
  t.match(err.message, "it needs process:write%(data%) and process:close_stdin%(%)")
  t.eq(box:exec("true").exit_code, 0, "the box works on")
end)

t.test("misuse: sandbox must be a box, and goes with a command", function()
  t.raises(function() tools.mcp{command = {"x"}, sandbox = {}} end, "sandbox must be a box")
  t.raises(function() tools.mcp{url = "http://h/mcp", sandbox = box} end, "a url server runs elsewhere")
end)

box:close()
return t.done()
