-- needs: docker
-- sandbox.open's runtime: the runtime a session runs under
-- (HostConfig.Runtime), on open, pools and engine entries; an engine that
-- lacks it is refused before a container is made. Run by tests/run twice: on
-- the main engine (runc), and as gvisor-sandbox_runtime_spec with
-- LUAGENT_TEST_RUNTIME=runsc against the gvisor test engine, where the
-- sessions run under gVisor and what it changes is checked.
local t = require "helper"
local sandbox, json, sys = luagent.sandbox, luagent.json, luagent.sys
local engines = require "luagent.sandbox.engine_set"
local pools = require "luagent.sandbox.pool"

local client = assert(sandbox.engine())
local host = client.endpoint.description

local K8S = t.engine == "k8s" -- the cluster's words: RuntimeClass, pods, no default runtime
local NS = t.k8s_namespace

local function containers_labelled(label)
  if K8S then
    return #assert(client:call("GET", "/api/v1/namespaces/" .. NS .. "/pods", nil, {query = {labelSelector = label}}))
      .items
  end
  local list = assert(client:call("GET", "/containers/json",
    nil, {query = {all = 1, filters = json.encode({label = {label}})}}))
  return #list
end

-- The runtime a session runs under, as its engine says (runc: the default).
local function runtime_of(box)
  if K8S then
    local p = assert(client:call("GET", "/api/v1/namespaces/" .. NS .. "/pods/" .. box.container))
    return p.spec.runtimeClassName or "runc"
  end
  return assert(client:call("GET", "/containers/" .. box.container .. "/json")).HostConfig.Runtime
end

t.test("a runtime the engine lacks fails the open before any container is made, naming what it has", function()
  local mark = "luagent.test.runtime=" .. sys.random_hex(6)
  local box, err = sandbox.open{runtime = "no-such-runtime", labels = {["luagent.test.runtime"] = mark:match("=(.*)")}}
  t.eq(box, nil, "no box")
  t.eq(err.kind, "config")
  t.match(err.message, 'runtime = "no%-such%-runtime"')
  t.match(err.message, K8S and "has no RuntimeClass" or "has no runtime", "says what is missing")
  t.ok(err.message:find(host, 1, true), "names the engine: " .. err.message)
  t.match(err.message, "runc", "lists the runtimes it has")
  t.match(err.message, K8S and "kind: RuntimeClass" or "daemon%.json", "says how to add one")
  t.eq(err.runtime, "no-such-runtime")
  t.ok(type(err.runtimes) == "table" and #err.runtimes > 0, "err.runtimes")
  t.eq(containers_labelled(mark), 0, "no container was made")
end)

t.test("a bad runtime option raises, naming it", function()
  t.raises(function() sandbox.open{runtime = 5} end, "runtime = 5")
  t.raises(function() sandbox.open{runtime = "run sc"} end, "runtime")
  t.raises(function() sandbox.open{engines = {{host = host, runtime = {}}}} end, "runtime")
end)

t.test("an engine entry's runtime: refused the same way, and part of the set's key (a pool never mixes them)", function()
  local plain = engines.set({engines = {{host = host}}})
  local with = engines.set({engines = {{host = host, runtime = "no-such-runtime"}}})
  t.ok(plain.key ~= with.key, "the key holds the entry's runtime")
  local spec = {id = "a", image = "i", labels = {}, limits = {memory = 1, cpus = 1, pids = 2}}
  local other = {id = "a", image = "i", labels = {}, limits = {memory = 1, cpus = 1, pids = 2}, runtime = "runsc"}
  t.ok(pools.key(plain, spec) ~= pools.key(plain, other), "and the pool key the open's")
  local box, err = sandbox.open{engines = {{host = host, runtime = "no-such-runtime"}}}
  if t.runtime then
    t.ok(box, "the open's runtime wins over the entry's: " .. tostring(err))
    box:close()
  else
    t.eq(box, nil)
    t.match(err.message, "entry 1 .*runtime = \"no%-such%-runtime\"", "names the entry")
  end
end)

t.test("the engine's runtimes are known (doctor and sandbox ls print them)", function()
  local rows = engines.status(engines.set({docker_host = host}))
  t.ok(rows[1].runtimes, K8S and "the cluster's RuntimeClasses" or "GET /info's Runtimes")
  t.match(engines.runtimes_text(rows[1]), "%(default%)")
  if t.runtime then t.match(engines.runtimes_text(rows[1]), t.runtime) end
end)

t.test("a session runs under the runtime asked for; a warm pool of another never serves it", function()
  local box <close> = assert(sandbox.open{})
  t.eq(runtime_of(box), t.runtime or "runc")
  local r = assert(box:exec({"sh", "-c", "dmesg 2>/dev/null | head -1; true"}))
  if t.runtime == "runsc" then t.match(r.stdout, "gVisor", "the sandbox kernel is gVisor's") end
  if not t.runtime then return end
  local warm <close> = assert(sandbox.pool{size = 1, runtime = "runc"})
  t.eq(warm:stats().ready, 1, "the runc pool is full")
  local other <close> = assert(sandbox.open{})
  t.eq(other.pooled, false, "a runc pool does not serve a " .. t.runtime .. " open")
  t.eq(runtime_of(other), t.runtime)
end)

-- How many processes of the sandbox user there are besides this one (ls
-- /proc fails under gVisor: statx).
local OTHERS = [[
import os
uid = os.getuid()
def mine(p):
    try:
        return os.stat("/proc/" + p).st_uid == uid
    except OSError:
        return False
print(sum(1 for p in os.listdir("/proc") if p.isdigit() and mine(p)) - 1)
]]

-- The bomb runs beside a Python parent that never forks while it runs (a
-- shell whose own fork fails at the cap exits); the parent counts the
-- processes of the sandbox user in /proc while the bomb is at the cap, and
-- leaves a `sleep` behind, so what the command's end kills is never zero
-- however fast the bomb burns out on its own (under gVisor it does, within
-- a second: each process whose fork fails ends, where under runc the bomb
-- stays at the cap; the CI run that saw `killed = 0` met that).
local BOMB = [[
import os, subprocess, time
subprocess.Popen(["sleep", "300"])
subprocess.Popen(["sh", "-c", "f() { f | f & }; f"], stderr=subprocess.DEVNULL)
peak, uid, end = 0, os.getuid(), time.time() + 3
while time.time() < end:
    n = 0
    for p in os.listdir("/proc"):
        try:
            n += p.isdigit() and os.stat("/proc/" + p).st_uid == uid
        except OSError:
            pass
    peak = max(peak, n)
    time.sleep(0.05)
print("bomb", peak)
]]

if t.runtime == "runsc" then t.test("under gVisor: a fork bomb is held at the pids cap and the session goes on", function()
  local box <close> = assert(sandbox.open{pids = 64, timeout = 30})
  local r = assert(box:exec({"python3", "-c", BOMB}, {timeout = 20}))
  local peak = tonumber(r.stdout:match("^bomb (%d+)\n$"))
  t.ok(peak, "the parent goes on: " .. r.stdout .. r.stderr:sub(1, 200))
  -- a few over: /proc still lists, for a moment, processes that are ending
  -- (65 seen); a bomb not held would be thousands
  t.ok(peak > 8 and peak <= 64 + 4, "the bomb grew and was held at pids = 64: " .. peak .. " processes at most")
  t.ok(r.killed > 0, "what it left is killed when it ends: " .. r.killed)
  if not K8S then -- (a pod has no pids cap of its own: the node's podPidsLimit)
    local cap = assert(client:call("GET", "/containers/" .. box.container .. "/json")).HostConfig.PidsLimit
    t.ok(type(cap) ~= "number" or cap <= 0, "no host pids cap (it counts the sandbox kernel's threads)")
  end
  local left = assert(box:exec({"python3", "-c", OTHERS}))
  t.eq(left.stdout, "0\n", "nothing of the bomb is left: the sandbox user's other processes")
end, {skip_engine = {k8s = "under runsc in a pod the bomb never grows past 3 processes (seen, not yet explained): "
  .. "the cap holds, but this test cannot show it there"}}) end

if t.runtime == "runsc" then t.test("under gVisor: a command over the memory cap ends the sandbox, and the error says so",
function()
  local box <close> = assert(sandbox.open{memory = "256m", timeout = 60})
  local r, err = box:exec({"python3", "-c", "x = bytearray(1024 * 1024 * 1024)"})
  t.eq(r, nil, "no result made of a dead sandbox")
  t.eq(err.kind, "sandbox_restarted"); t.eq(err.restarted, "container")
  t.match(err.message, "passed its memory limit and was OOM%-killed", "the engine's OOMKilled, said")
  t.eq(assert(box:exec({"echo", "back"})).stdout, "back\n", "the session is back")
end) end

return t.done()
