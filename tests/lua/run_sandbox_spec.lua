-- needs: docker
-- luagent.run with sandboxes: a sandbox a run opened and forgot is removed
-- when THAT run ends — not at the end of the process, and not when another
-- run ends — so an eval's runs each clean up after themselves.
local t = require "helper"
local run = require "luagent.run"
local fs = luagent.fs

local work = assert(fs.temp_dir("luagent-run-sandbox-spec"))
luagent.at_exit(function() fs.remove(work) end)

-- Opens a box, never closes it, says which container it is; with
-- settings.hold it waits for the file `release` before using the box again.
assert(fs.write(work .. "/forget.lua", [[
local s = luagent.settings
local box = assert(luagent.sandbox.open{labels = {["luagent.test"] = "run_sandbox_spec"}})
assert(luagent.fs.write(luagent.run_dir() .. "/container", box.container))
if s.hold then
  local deadline = luagent.now() + 60
  while not luagent.fs.exists(s.hold) and luagent.now() < deadline do luagent.sleep(0.05) end
  local r, err = box:exec("echo still here")
  print(r and r.stdout or tostring(err))
end
]]))

local function wait_for(path)
  local deadline = luagent.now() + 60
  while not fs.exists(path) and luagent.now() < deadline do luagent.sleep(0.05) end
  return assert(fs.read(path))
end

local function container_state(client, id)
  local info, err = client:call("GET", "/containers/" .. id .. "/json")
  if not info then return err.kind end
  return info.State.Running and "running" or "stopped"
end

t.test("a run's forgotten sandbox is removed when that run ends, while another run keeps its own", function()
  local client = assert(luagent.sandbox.engine())
  local release = work .. "/release"
  local quick = assert(run.new{recipe = work .. "/forget.lua", dir = work .. "/runs/quick", quiet = true})
  local held = assert(run.new{recipe = work .. "/forget.lua", dir = work .. "/runs/held", quiet = true,
                              capture = true, settings = {hold = release}})
  local held_task = luagent.spawn(held.execute, held)
  local result = quick:execute()
  t.eq(result.status, "ok", tostring(result.error))
  local quick_id = assert(fs.read(work .. "/runs/quick/container"))
  t.eq(container_state(client, quick_id), "not_found", "the quick run's sandbox is gone when it ends")
  local held_id = wait_for(work .. "/runs/held/container")
  t.eq(container_state(client, held_id), "running", "the other run's sandbox is left alone")
  assert(fs.write(release, "go"))
  local held_result = assert(held_task:wait())
  t.eq(held_result.status, "ok", tostring(held_result.error))
  t.eq(fs.read(work .. "/runs/held/stdout.txt"), "still here\n\n", "its box still worked after the other run ended")
  t.eq(container_state(client, held_id), "not_found", "and is gone when its own run ends")
  local closes = 0
  for line in fs.read(held_result.trace):gmatch("[^\n]+") do
    if line:find('"type":"sandbox_close"', 1, true) then closes = closes + 1 end
  end
  t.eq(closes, 1, "its trace records its own sandbox's close")
end)

return t.done()
