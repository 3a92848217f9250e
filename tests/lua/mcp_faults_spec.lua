-- tools.mcp when things go wrong: a program that is not there, programs
-- that are no MCP server, a server that never answers, servers that die at
-- start or in the middle of a call; and servers ended with the run.
local t = require "helper"
local servers = require "mcp_servers"
local fs = require "luagent.fs"
local run = require "luagent.run"
local tools = require "luagent.tools"

local function fails(opts, kind, pattern)
  local started = luagent.now()
  local list, err = tools.mcp(opts)
  t.eq(list, nil, "no tools")
  t.eq(err.kind, kind, tostring(err))
  t.match(err.message, pattern)
  return err, luagent.now() - started
end

local function gone(pid)
  local stat = fs.read("/proc/" .. pid .. "/stat")
  return stat == nil or stat:match("^%d+ %b() (%a)") == "Z"
end

t.test("a command that does not exist: not_found, naming the server and the command", function()
  fails({command = {"no-such-mcp-server", "--flag"}}, "not_found",
        "^cannot start the MCP server 'no%-such%-mcp%-server' %(command no%-such%-mcp%-server%): program "
        .. "'no%-such%-mcp%-server' not found in PATH")
end)

t.test("cat speaks no MCP (it echoes the request back): protocol, naming it", function()
  local _, took = fails({command = {"cat"}}, "protocol",
                        "^the MCP server 'cat' does not speak MCP: it sent our own initialize request back")
  t.lt(took, 2, "at once, not at a timeout")
end)

t.test("a program printing something else: protocol, quoting what it printed", function()
  fails({command = {"sh", "-c", "echo 'Welcome to my tool v1'; sleep 30"}, name = "chatty"}, "protocol",
        "^the MCP server 'chatty' does not speak MCP: it printed \"Welcome to my tool v1\" where a JSON%-RPC message belongs")
end)

t.test("a server that never answers initialize: a timeout error, and it is ended", function()
  local started = luagent.now()
  local err = fails({command = {"sleep", "30"}, start_timeout = 0.5}, "timeout",
                    "^the MCP server 'sleep' did not answer initialize within 0.5 s")
  t.lt(luagent.now() - started, 3, "the timeout and the kill")
  t.eq(err.server, "sleep")
end)

t.test("a client that fails to initialize was born closed: its program is ended at once, and the trace says so", function()
  local pidfile = os.tmpname()
  local seen = {}
  local sub = luagent.events.subscribe(function(ev) if ev.type:match("^mcp_") then seen[ev.type] = true end end)
  fails({command = {"sh", "-c", "echo $$ > " .. pidfile .. "; echo 'not MCP'; sleep 30"}, name = "halfway"}, "protocol",
        "^the MCP server 'halfway' does not speak MCP")
  luagent.events.unsubscribe(sub)
  local pid = tonumber(fs.read(pidfile))
  os.remove(pidfile)
  t.ok(pid and gone(pid), "the program is gone")
  t.ok(seen.mcp_failed and seen.mcp_close, "mcp_failed and mcp_close")
  t.eq(seen.mcp_start, nil, "it never started")
end)

t.test("a server that exits at start: its status and its stderr line that says why", function()
  fails({command = servers.filesystem("/no/such/folder")}, "mcp",
        "^the MCP server 'mcp%-server%-filesystem' exited with status 1: Error accessing directory /no/such/folder")
  fails({command = {"sh", "-c", "echo 'config file missing' >&2; exit 3"}, name = "dies"}, "mcp",
        "^the MCP server 'dies' exited with status 3: config file missing$")
end)

t.test("a server that dies in the middle of a call: that call and later ones fail naming it; no hang", function()
  local list = assert(tools.mcp{command = servers.everything(), name = "victim",
                                only = {"trigger-long-running-operation", "echo"}})
  local pid = list.client.t.pid()
  servers.dies_mid_call(t, list, "victim", function() os.execute("kill -KILL " .. pid) end)
end)

-- A recipe run in a run of its own (luagent.run), as luagent eval runs them.
local work = fs.temp_dir("mcp-faults")
local function run_recipe(name, source)
  fs.write(work .. "/" .. name .. ".lua", source)
  local r = assert(run.new{recipe = work .. "/" .. name .. ".lua", dir = work .. "/runs/" .. name, quiet = true,
                           args = {}})
  local result = r:execute(table.concat(servers.everything(), " "))
  return result, servers.trace_events(result.trace)
end

local event = servers.event

t.test("a server the recipe never closes is ended with its run; the trace has its start and end", function()
  local result, lines = run_recipe("forgets", [[
    local command = {}
    for word in (...):gmatch("%S+") do command[#command + 1] = word end
    local list = assert(luagent.tools.mcp{command = command, name = "forgotten"})
    return #list > 0 and 0 or 1
  ]])
  t.eq(result.status, "ok")
  local start = t.ok(event(lines, "mcp_start"), "mcp_start in the trace")
  t.eq(start.server, "forgotten")
  t.ok(event(lines, "mcp_close"), "mcp_close in the trace")
  t.ok(gone(start.pid), "the server process is gone")
end)

t.test("a recipe that fails: the server is killed, <close> handlers run, the trace keeps what happened", function()
  local result, lines = run_recipe("fails", [[
    local command = {}
    for word in (...):gmatch("%S+") do command[#command + 1] = word end
    local list = assert(luagent.tools.mcp{command = command, name = "doomed", only = {"echo"}})
    local marker <close> = setmetatable({}, {__close = function() luagent.events.emit{type = "close_ran"} end})
    list[1].handler({message = "before the failure"})
    error("the recipe fails here")
  ]])
  t.eq(result.status, "failed")
  t.match(result.error.message, "the recipe fails here")
  t.ok(event(lines, "close_ran"), "the <close> handler ran")
  local start = t.ok(event(lines, "mcp_start"), "mcp_start in the trace")
  t.ok(event(lines, "mcp_close"), "mcp_close in the trace")
  t.eq(event(lines, "run_end").status, "failed")
  t.ok(gone(start.pid), "the server process is gone")
end)

t.test("a bad MCP command in a recipe: one clear error, <close> handlers run, the trace has it", function()
  local result, lines = run_recipe("badcommand", [[
    local marker <close> = setmetatable({}, {__close = function() luagent.events.emit{type = "close_ran"} end})
    assert(luagent.tools.mcp{command = {"no-such-mcp-server"}})
  ]])
  t.eq(result.status, "failed")
  t.match(result.error.message, "cannot start the MCP server 'no%-such%-mcp%-server'")
  t.ok(event(lines, "close_ran"), "the <close> handler ran")
  t.eq(event(lines, "mcp_failed").kind, "not_found")
  t.match(event(lines, "run_end").error, "cannot start the MCP server 'no%-such%-mcp%-server'")
end)

fs.remove(work)
return t.done()
