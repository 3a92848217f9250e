-- needs: docker
-- tools.mcp{command = ..., sandbox = box}: the real reference servers
-- (@modelcontextprotocol/server-filesystem and server-everything, installed
-- on the host by tests/mcp-servers.sh) run inside the sandbox with the image's
-- node, their package staged by the box's manifest (the sandbox has no
-- network). The filesystem server acts on the sandbox's /workspace, under its
-- limits, and is ended with the box, with the run, on Ctrl-C; a server that
-- dies is a clear tool error.
local t = require "helper"
local servers = require "mcp_servers"
local fs = require "luagent.fs"
local process = require "luagent.process"
local run = require "luagent.run"
local sandbox = require "luagent.sandbox"
local tools = require "luagent.tools"

local MODULES = servers.dir() .. "/node_modules"
local PACKAGES = "/workspace/.mcp/node_modules/@modelcontextprotocol/"
local FILESYSTEM = {"node", PACKAGES .. "server-filesystem/dist/index.js", "/workspace"}
local EVERYTHING = {"node", PACKAGES .. "server-everything/dist/index.js"}

local function open_box()
  return assert(sandbox.open{memory = "512m", pids = 128, timeout = 60,
                             manifest = {[".mcp/node_modules"] = sandbox.dir(MODULES)}})
end

local function by_name(list)
  local out = {}
  for _, tool in ipairs(list) do out[tool.name] = tool end
  return out
end

-- The pids of the box's node processes whose command line contains `word`.
local function pids_of(box, word)
  local r = assert(box:exec({"sh", "-c", "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null | "
    .. "grep -q \"^node .*$0\" && p=${f%/cmdline} && echo ${p#/proc/}; done; true", word}))
  local pids = {}
  for pid in r.stdout:gmatch("%d+") do pids[#pids + 1] = pid end
  return pids
end

local started = luagent.now()
local box = open_box()
local staged_in = luagent.now() - started
local fsl = assert(tools.mcp{command = FILESYSTEM, sandbox = box, name = "boxfs"})
local fst = by_name(fsl)
print(("    # box with the servers' node_modules (%s) staged: %.2f s; filesystem server up: %.2f s")
  :format(select(2, luagent.sys.execute({"du", "-sh", MODULES})):match("^(%S+)"), staged_in,
          luagent.now() - started - staged_in))

t.test("the filesystem server runs in the sandbox: its tools are listed", function()
  t.ok(fst.write_file and fst.read_text_file and fst.list_directory, "write_file, read_text_file, list_directory")
  t.eq(fsl.client.server_info.name, "secure-filesystem-server")
  local roots = fst.list_allowed_directories.handler({})
  t.match(roots, "/workspace", "it serves the sandbox's /workspace")
end)

t.test("a file written by the server is in the sandbox's workspace (box:get), and read back", function()
  local text = "written inside the sandbox\nline 2\n"
  t.match(fst.create_directory.handler({path = "/workspace/notes"}), "Successfully created directory")
  t.match(fst.write_file.handler({path = "/workspace/notes/hello.txt", content = text}), "Successfully wrote")
  t.eq(box:get("notes/hello.txt"), text, "box:get sees what the server wrote")
  t.eq(fst.read_text_file.handler({path = "/workspace/notes/hello.txt"}), text)
  assert(box:put("from_host.txt", "staged by the host"))
  t.match(fst.list_directory.handler({path = "/workspace"}), "%[FILE%] from_host.txt")
end)

t.test("a path outside /workspace is refused by the server, and nothing is written there", function()
  local ok, err = pcall(fst.write_file.handler, {path = "/tmp/outside.txt", content = "x"})
  t.eq(ok, false)
  t.eq(err.kind, "tool")
  t.match(err.message, "Access denied %- path outside allowed directories")
  t.eq(box:exec("test -e /tmp/outside.txt").exit_code, 1, "no /tmp/outside.txt in the sandbox")
  ok, err = pcall(fst.read_text_file.handler, {path = "/workspace/../etc/passwd"})
  t.eq(ok, false)
  t.match(err.message, "Access denied")
end)

t.test("the server is a sandbox process: uid 1000, the box's cgroup (its memory and pids caps), no network", function()
  local pid = t.ok(pids_of(box, "server-filesystem")[1], "node runs in the box")
  local r = assert(box:exec({"sh", "-c", "grep -E '^Uid:' /proc/$0/status; "
    .. "[ \"$(cat /proc/$0/cgroup)\" = \"$(cat /proc/self/cgroup)\" ] && echo same cgroup; "
    .. "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max 2>/dev/null; "
    .. "ls /sys/class/net", pid}))
  t.match(r.stdout, "^Uid:%s+1000%s")
  t.match(r.stdout, "same cgroup")
  t.match(r.stdout, "\n128\n", "the pids cap")
  t.no_match(r.stdout, "eth0", "no network interface but lo")
end)

t.test("server-everything in the sandbox: one echo call", function()
  local list <close> = assert(tools.mcp{command = EVERYTHING, sandbox = box, name = "boxed-everything",
                                        only = {"echo"}})
  t.eq(list[1].handler({message = "from inside"}), "Echo: from inside")
end)

t.test("a server that dies in the sandbox: the call is a clear tool error naming it; no hang", function()
  local list = assert(tools.mcp{command = EVERYTHING, sandbox = box, name = "victim",
                                only = {"trigger-long-running-operation", "echo"}})
  servers.dies_mid_call(t, list, "victim", function()
    local pid = t.ok(pids_of(box, "server-everything")[1], "its node runs")
    t.eq(box:exec("kill -KILL " .. pid).exit_code, 0, "killed from a command (the same uid)")
  end)
end)

t.test("a program that is not in the sandbox: one clear error naming the server and why", function()
  local list, err = tools.mcp{command = {"no-such-server"}, sandbox = box}
  t.eq(list, nil)
  t.eq(err.kind, "mcp")
  t.match(err.message, "^the MCP server 'no%-such%-server' exited with status 127: cannot run no%-such%-server: ")
end)

t.test("misuse: sandbox must be a box, and goes with a command", function()
  t.raises(function() tools.mcp{command = {"x"}, sandbox = {}} end, "sandbox must be a box")
  t.raises(function() tools.mcp{url = "http://h/mcp", sandbox = box} end, "a url server runs elsewhere")
end)

t.test("an API key in the server's env is refused (raised, as box:spawn does) before anything starts", function()
  local before = #pids_of(box, "server-filesystem")
  t.raises(function() tools.mcp{command = FILESYSTEM, sandbox = box, env = {TOKEN = t.env("OPENAI_API_KEY")}} end,
           "env.TOKEN carries the value of OPENAI_API_KEY; API keys never enter a sandbox")
  t.eq(#pids_of(box, "server-filesystem"), before, "no server started")
end)

t.test("the server is killed when its box closes; a call then fails naming it", function()
  local other = open_box()
  local list = assert(tools.mcp{command = FILESYSTEM, sandbox = other, name = "closing"})
  t.eq(#pids_of(other, "server-filesystem"), 1)
  local container = other.container
  other:close()
  local client = assert(luagent.engine_client.connect())
  local _, gone = client:call("GET", "/containers/" .. container .. "/json")
  t.eq(gone and gone.kind, "not_found", "the container, and the server with it, is gone")
  local ok, err = pcall(fst.list_allowed_directories.handler, {}) -- another box's server lives on
  t.ok(ok, tostring(err))
  ok, err = pcall(list[1].handler, {path = "/workspace"})
  t.eq(ok, false)
  t.eq(err.kind, "mcp")
  t.match(err.message, "^the MCP server 'closing' is gone: ")
  list:close()
end)

-- A recipe run in a run of its own (luagent.run), in this process, with this spec's box.
local work = assert(fs.temp_dir("mcp-sandbox"))
local shared = {box = box, command = FILESYSTEM, pids_of = pids_of}
package.loaded["mcp_sandbox_shared"] = shared

local event = servers.event

t.test("a server the recipe never closes is ended with its run; the box lives on", function()
  fs.write(work .. "/forgets.lua", [[
    local shared = require "mcp_sandbox_shared"
    local list = assert(luagent.tools.mcp{command = shared.command, sandbox = shared.box, name = "forgotten"})
    shared.during = #shared.pids_of(shared.box, "server-filesystem")
    return #list > 0 and 0 or 1
  ]])
  local before = #pids_of(box, "server-filesystem")
  t.eq(before, 1, "the spec's own server")
  local r = assert(run.new{recipe = work .. "/forgets.lua", dir = work .. "/runs/forgets", quiet = true, args = {}})
  local result = r:execute()
  t.eq(result.status, "ok")
  local lines = servers.trace_events(result.trace)
  t.eq(t.ok(event(lines, "mcp_start"), "mcp_start in the trace").server, "forgotten")
  t.ok(event(lines, "mcp_close"), "mcp_close in the trace")
  t.eq(shared.during, 2, "it ran beside the spec's own server")
  t.eq(#pids_of(box, "server-filesystem"), 1, "its node is gone from the box; the spec's own server runs on")
  t.eq(box:exec("echo alive").stdout, "alive\n")
end)

t.test("Ctrl-C during a call to a server in the sandbox: exit 130, the server and its box are gone", function()
  fs.write(work .. "/interrupted.lua", ([[
    local box <close> = assert(luagent.sandbox.open{
      manifest = {[".mcp/node_modules"] = luagent.sandbox.dir(%q)}})
    print("container " .. box.container); io.stdout:flush()
    local list <close> = assert(luagent.tools.mcp{command = {"node", %q}, sandbox = box, name = "everything",
                                                  only = {"trigger-long-running-operation"}})
    luagent.events.subscribe(function(ev)
      if ev.type == "mcp_progress" then print("ready"); io.stdout:flush() end
    end)
    list[1].handler({duration = 60, steps = 120}, {turn = 1})
  ]]):format(MODULES, EVERYTHING[2]))
  local env = process.environ()
  env.LUAGENT_RUNS_DIR = work .. "/runs"
  local child = assert(process.spawn{argv = {t.env("LUAGENT"), "run", work .. "/interrupted.lua"},
                                     env = env, stdout = "pipe", stderr = "pipe"})
  local out = ""
  local deadline = luagent.now() + 60
  while not out:find("ready") and luagent.now() < deadline do
    local data = child:read("stdout")
    if not data then break end
    out = out .. data
  end
  t.match(out, "ready", "the call is under way")
  child:kill("INT")
  local code = child:wait(30)
  t.eq(code, 130)
  local container = out:match("container (%x+)")
  local client = assert(luagent.engine_client.connect())
  local _, gone = client:call("GET", "/containers/" .. container .. "/json")
  t.eq(gone and gone.kind, "not_found", "the box, and the server in it, is gone")
  local trace = ""
  for _, e in ipairs(assert(fs.walk(work .. "/runs"))) do
    if e.path:match("interrupted.*/trace%.jsonl$") then trace = fs.read(work .. "/runs/" .. e.path) end
  end
  t.match(trace, '"type":"mcp_cancelled"')
  t.match(trace, '"type":"mcp_close"')
  t.match(trace, '"status":"interrupted"')
end)

fsl:close()
box:close()
fs.remove(work)
return t.done()
