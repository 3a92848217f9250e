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
