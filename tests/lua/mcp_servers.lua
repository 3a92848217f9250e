-- The reference MCP servers the MCP specs talk to (real ones, from the npm
-- registry: tests/mcp-servers.sh installs them on first use), and
-- server-everything over Streamable HTTP on a free port.
local process = require "luagent.process"

local servers = {}

local dir

function servers.dir()
  if not dir then
    local code, out = luagent.sys.execute({"sh", "tests/mcp-servers.sh"})
    if code ~= 0 then error("test setup: tests/mcp-servers.sh failed (node, npm, the npm registry?):\n" .. out, 2) end
    dir = out:match("([^\n]+)\n?$")
  end
  return dir
end

local function bin(name)
  return servers.dir() .. "/node_modules/.bin/" .. name
end

function servers.everything(...)
  return {bin("mcp-server-everything"), ...}
end

function servers.filesystem(root)
  return {bin("mcp-server-filesystem"), root}
end

-- server-everything serving Streamable HTTP: its process (stdout: its log) and URL.
-- The SDK's HTTP server calls the global `crypto`, which node 18 (Debian 12's)
-- has only behind a flag.
function servers.everything_http()
  local _, version = luagent.sys.execute({"node", "--version"})
  for _ = 1, 5 do
    local port = math.random(20000, 50000)
    local env = process.environ()
    env.PORT = tostring(port)
    if version:match("^v18%.") then env.NODE_OPTIONS = "--experimental-global-webcrypto" end
    local proc = assert(process.spawn{argv = servers.everything("streamableHttp"), env = env, stdout = "pipe",
                                      stderr = "pipe", new_group = true})
    local said = ""
    while true do
      local data = proc:read("stderr")
      if not data then break end
      said = said .. data
      if said:find("listening on port") then return proc, ("http://127.0.0.1:%d/mcp"):format(port) end
    end
    proc:close()
  end
  error("test setup: server-everything did not start over HTTP (5 ports tried)", 2)
end

-- A server that dies in the middle of a call (`kill()` ends it): that call
-- and a later one fail with the same clear error naming it, without a hang.
-- list: the tools {trigger-long-running-operation, echo} of server `name`.
function servers.dies_mid_call(t, list, name, kill)
  local call = luagent.spawn(function() return pcall(list[1].handler, {duration = 5, steps = 5}) end)
  luagent.sleep(0.3)
  kill()
  local ok, err = call:wait()
  t.eq(ok, false)
  t.eq(err.kind, "mcp")
  t.eq(err.message, ("the MCP server '%s' was killed by signal KILL"):format(name))
  local ok2, err2 = pcall(list[2].handler, {message = "x"})
  t.eq(ok2, false)
  t.eq(err2.message, err.message, "a later call fails at once with the same error")
  list:close()
end

-- The events of a run's trace file, and the first one of a type.
function servers.trace_events(path)
  local lines = {}
  for line in (luagent.fs.read(path) or ""):gmatch("[^\n]+") do lines[#lines + 1] = luagent.json.decode(line) end
  return lines
end

function servers.event(lines, ty)
  for _, ev in ipairs(lines) do
    if ev.type == ty then return ev end
  end
end

-- Every event of the given types while fn runs.
function servers.events_during(types, fn)
  local seen, wanted = {}, {}
  for _, ty in ipairs(types) do wanted[ty] = true end
  local sub = luagent.events.subscribe(function(ev)
    if wanted[ev.type] then seen[#seen + 1] = ev end
  end)
  local ok, err = pcall(fn)
  luagent.events.unsubscribe(sub)
  if not ok then error(err, 0) end
  return seen
end

return servers
