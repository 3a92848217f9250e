-- needs: docker
-- The warm pool (luagent.sandbox.pool): sandbox.pool{size, ...} and
-- sandbox.open{pool = N} keep started, never-used sessions of one spec; an
-- open of that spec takes one (fresh, its supervisor up, handed out once),
-- the pool refills, another spec opens cold; pools are drained at the end of
-- their run, on an error, on Ctrl-C, and a crashed process's are swept.
-- Needs the Docker engine and the luagent-sandbox image (tests/run provides
-- both). Sessions are small (64m) and labelled with this spec's tag.
local t = require "helper"
local sandbox, fs, sys = luagent.sandbox, luagent.fs, luagent.sys
local process = require "luagent.process"
local pools = require "luagent.sandbox.pool"
local run = require "luagent.run"

local work = assert(fs.realpath(assert(fs.temp_dir("luagent-pool-spec"))))
luagent.at_exit(function() fs.remove(work) end)
local LUAGENT = t.env("LUAGENT")
local client = assert(sandbox.engine())

-- Small sessions with their own label, so tests never share a pool.
local function small(tag, extra)
  local o = {memory = "64m", tmp_size = "16m", workspace_size = "16m", labels = {["luagent.test"] = tag}}
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local function new_tag() return "pool-" .. sys.random_hex(4) end

-- On the test cluster (LUAGENT_TEST_ENGINE=k8s) sessions are pods, and
-- their workspaces emptyDirs that go with them: no volumes to count.
local NS = t.k8s_namespace

local function pods(selector, running)
  local list = assert(client:call("GET", "/api/v1/namespaces/" .. NS .. "/pods", nil, {query = {labelSelector = selector}}))
  local out = {}
  for _, p in ipairs(list.items) do
    if not p.metadata.deletionTimestamp and (not running or p.status.phase == "Running") then
      out[#out + 1] = p.metadata.name
    end
  end
  return out
end

-- The session's container or pod, gone now? (nil, err of kind not_found)
local function session_object(name)
  if NS then return client:call("GET", "/api/v1/namespaces/" .. NS .. "/pods/" .. name) end
  return client:call("GET", "/containers/" .. name .. "/json")
end

-- How many containers (or volumes) carry every one of the labels.
local function count(kind, ...)
  if NS then return kind == "volumes" and select("#", ...) > 0 and 0 or #pods(table.concat({...}, ",")) end
  local path = kind == "volumes" and "/volumes" or "/containers/json"
  local found = assert(client:call("GET", path, nil, {query = {all = 1, filters = {label = {...}}}}))
  return #(kind == "volumes" and (found.Volumes or {}) or found)
end

local function nothing_left(what, ...)
  t.eq(count("containers", ...), 0, what .. ": containers left")
  t.eq(count("volumes", ...), 0, what .. ": volumes left")
end

local function timed(fn)
  local started = luagent.now()
  local a, b = fn()
  return luagent.now() - started, a, b
end

-- ---- a child luagent process ----

local function script(name, text)
  local path = work .. "/" .. name
  assert(fs.write(path, text))
  return path
end

-- Starts `luagent run -q PATH -- args...`; returns the process and what it
-- printed once a line matches `pattern` (its captures).
-- luagent's argv, on the test cluster when the spec runs there
local function luagent_argv(...)
  local argv = {LUAGENT, ...}
  if NS then table.insert(argv, 1, "env"); table.insert(argv, 2, "LUAGENT_ENGINES=" .. os.getenv("LUAGENT_TEST_K8S")) end
  return argv
end

local function child(path, pattern, ...)
  local proc = assert(process.spawn{argv = luagent_argv("run", "-q", path, "--", ...), stdout = "pipe",
                                    stderr = "pipe"})
  local got = ""
  while true do
    local chunk = proc:read("stdout")
    if not chunk then break end
    got = got .. chunk
    if got:match(pattern) then return proc, got:match(pattern) end
  end
  error(("the child ended before printing %q: %s%s"):format(pattern, got, tostring(proc:read("stderr"))), 2)
end

-- ---- the key ----

t.test("the key: per-session and per-open parts do not count, the rest does", function()
  local c = {key = "unix:///var/run/docker.sock|env#"} -- an engine set (luagent.sandbox.engine_set)
  local function spec(over)
    local s = {id = "aaa", image = "img", limits = {memory = 1, cpus = 1, pids = 2}, staged = {{name = "x"}},
               restore = "r.tar", labels = {["luagent.session"] = "aaa", ["luagent.pool"] = "p1", mine = "1"},
               env = {"A=1"}}
    for k, v in pairs(over or {}) do s[k] = v end
    return s
  end
  local base = pools.key(c, spec())
  t.eq(pools.key(c, spec{id = "bbb", staged = {}, restore = nil,
    labels = {["luagent.session"] = "bbb", mine = "1"}}), base, "id, staged, restore, session and pool labels")
  t.eq(pools.key(c, spec{limits = {memory = 1, cpus = 1.0, pids = 2}}), base, "1 and 1.0")
  t.ok(pools.key(c, spec{limits = {memory = 2, cpus = 1, pids = 2}}) ~= base, "memory counts")
  t.ok(pools.key(c, spec{labels = {mine = "2"}}) ~= base, "the recipe's labels count")
  t.ok(pools.key(c, spec{env = {"A=2"}}) ~= base, "env counts")
  t.ok(pools.key(c, spec{image = "other"}) ~= base, "image counts")
  t.ok(pools.key({key = "tcp://other:2376|env#"}, spec()) ~= base, "the engine counts")
  t.ok(pools.key({key = c.key .. ",tcp://other:2376|env#"}, spec()) ~= base, "another engine in the set counts")
end)

-- ---- hand-out ----

t.test("an open from the pool is fast, pre-started, warm, and a fresh session", function()
  local tag = new_tag()
  local warm <close> = assert(sandbox.pool(small(tag, {size = 2})))
  t.eq(warm:stats().ready, 2)
  local started = {}
  if NS then
    for _, name in ipairs(pods("luagent.pool=" .. warm.id, true)) do started[name] = true end
  else
    for _, c in ipairs(assert(client:call("GET", "/containers/json", nil,
        {query = {filters = {label = {"luagent.pool=" .. warm.id}, status = {"running"}}}}))) do
      started[c.Id] = true
    end
  end
  local took, first = timed(function() return sandbox.open(small(tag, {manifest = {["in/a.txt"] = "one"}})) end)
  t.ok(first and first.pooled, "taken from the pool")
  t.ok(started[first.container], "its container was running before the open")
  t.lt(took, 0.5, "a pooled open with a small manifest")
  t.ok(first._session.supervisor and not first._session.serving, "its supervisor is already serving")
  t.eq(first:get("in/a.txt"), "one", "the manifest is staged after hand-out")
  t.eq(first:exec("echo scratch > left.txt; echo tmp > /tmp/t; ls").stdout, "in\nleft.txt\n")
  t.eq(first:python("secret = 42; secret").stdout, "42\n")
  assert(first:snapshot(work .. "/first.tar"))
  assert(first:close())

  local second
  took, second = timed(function() return sandbox.open(small(tag)) end)
  t.ok(second.pooled, "the second open is from the pool too")
  -- (on a cluster the claim is two API calls: 10-16 ms idle, bench/k8s; a
  -- bound that still tells a claim from a pod's start, ~2 s, under load)
  t.lt(took, NS and 0.5 or 0.05, "a pooled open without a manifest")
  t.ok(second.container ~= first.container and second.session ~= first.session, "another session")
  t.eq(second:exec("ls -A; ls -A /tmp").stdout, "", "nothing of the previous user in the workspace or /tmp")
  t.eq(second:python("'secret' in globals()").stdout, "False\n", "nor in Python")
  assert(second:close())

  assert(warm:wait())
  local restored <close> = assert(sandbox.open(small(tag, {restore = work .. "/first.tar"})))
  t.ok(restored.pooled)
  t.eq(restored:get("left.txt"), "scratch\n", "restore works on a pooled session")
end)

t.test("staging into a pooled session: a small manifest and a big one arrive whole, owned by the user", function()
  local tag = new_tag()
  local warm <close> = assert(sandbox.pool(small(tag, {size = 1, workspace_size = "32m"})))
  assert(fs.mkdir(work .. "/tree/bin"))
  assert(fs.write(work .. "/tree/bin/hello.sh", "#!/bin/sh\necho hello\n"))
  assert(sys.execute({"chmod", "755", work .. "/tree/bin/hello.sh"}) == 0)
  local big = ("0123456789abcdef"):rep(96 * 1024) -- 1.5 MiB: over what goes through the supervisor
  assert(fs.write(work .. "/big.bin", big))
  for _, case in ipairs({
    {what = "small", manifest = {["tree"] = sandbox.dir(work .. "/tree"), ["notes/a.txt"] = "note"}},
    {what = "big", manifest = {["tree"] = sandbox.dir(work .. "/tree"), ["notes/a.txt"] = "note",
                               ["data/big.bin"] = sandbox.file(work .. "/big.bin")}},
  }) do
    assert(warm:wait())
    local box <close> = assert(sandbox.open(small(tag, {workspace_size = "32m", manifest = case.manifest})))
    t.ok(box.pooled, case.what)
    t.eq(box:exec("tree/bin/hello.sh").stdout, "hello\n", case.what .. ": the mode is kept")
    t.eq(box:get("notes/a.txt"), "note", case.what)
    t.eq(box:exec("stat -c %u:%g notes/a.txt tree/bin/hello.sh").stdout, "1000:1000\n1000:1000\n", case.what)
    if case.what == "big" then t.ok(box:get("data/big.bin") == big, "the big file arrived whole") end
  end
end)

t.test("the pool refills in the background after a hand-out", function()
  local tag = new_tag()
  local warm <close> = assert(sandbox.pool(small(tag, {size = 2})))
  local a <close> = assert(sandbox.open(small(tag)))
  local b <close> = assert(sandbox.open(small(tag)))
  t.ok(a.pooled and b.pooled)
  local s = warm:stats()
  t.eq(s.taken, 2); t.eq(s.ready + s.starting, 2, "two new sessions are starting")
  assert(warm:wait())
  t.eq(warm:stats().ready, 2)
  t.eq(count("containers", "luagent.pool=" .. warm.id), 4, "two handed out, two ready")
  local c <close> = assert(sandbox.open(small(tag)))
  t.ok(c.pooled, "the refilled pool hands out again")
  t.ok(c.container ~= a.container and c.container ~= b.container)
end)

t.test("a ready session that died while it waited is not handed out, and is removed", function()
  local tag = new_tag()
  local warm <close> = assert(sandbox.pool(small(tag, {size = 2})))
  local dead = warm.ready[1].container
  if NS then -- a pod that dies is deleted (its container would be restarted by the kubelet)
    assert(client:call("DELETE", "/api/v1/namespaces/" .. NS .. "/pods/" .. dead, {gracePeriodSeconds = 0}))
  else
    assert(client:call("POST", "/containers/" .. dead .. "/kill"))
  end
  local deadline = luagent.now() + 10
  while warm.ready[1]:alive() and luagent.now() < deadline do luagent.sleep(0.05) end
  local box <close> = assert(sandbox.open(small(tag)))
  t.ok(box.pooled, "the other ready one")
  t.ok(box.container ~= dead)
  t.eq(box:exec("echo alive").stdout, "alive\n")
  assert(warm:wait())
  local gone, err = session_object(dead)
  t.ok(gone == nil and err.kind == "not_found" or gone and gone.metadata.deletionTimestamp, "the dead one was removed")
end)

-- (12 on the test cluster: its one node has room for the CPU requests of 20
-- pods, and 20 opens with the pool's refills would wait for each other)
local TASKS = NS and 12 or 20
t.test(TASKS .. " tasks opening at once with a pool of 4 never get the same session", function()
  local tag = new_tag()
  local warm <close> = assert(sandbox.pool(small(tag, {size = 4})))
  t.eq(warm:stats().ready, 4)
  local boxes, errs = luagent.wait_all((function()
    local tasks = {}
    for i = 1, TASKS do tasks[i] = luagent.spawn(function() return assert(sandbox.open(small(tag))) end) end
    return tasks
  end)())
  t.eq(errs, nil, "every open worked")
  local seen, pooled = {}, 0
  for _, box in ipairs(boxes) do
    t.eq(seen[box.container], nil, "a container handed out twice")
    seen[box.container] = true
    if box.pooled then pooled = pooled + 1 end
  end
  t.eq(pooled, 4, "the four ready ones went to four opens; the others opened cold")
  local hosts = luagent.map(boxes, function(box) return box:exec("hostname").stdout end)
  local names = {}
  for _, h in ipairs(hosts) do
    t.eq(names[h], nil, "two boxes answer from one container")
    names[h] = true
  end
  luagent.map(boxes, function(box) return box:close() end)
end)

t.test("a spec that does not match opens cold and leaves the pool alone", function()
  local tag = new_tag()
  local warm <close> = assert(sandbox.pool(small(tag, {size = 1})))
  local other <close> = assert(sandbox.open(small(tag, {memory = "96m"})))
  t.eq(other.pooled, false, "more memory")
  local labelled <close> = assert(sandbox.open(small(tag, {labels = {["luagent.test"] = tag .. "-b"}})))
  t.eq(labelled.pooled, false, "other labels")
  local env <close> = assert(sandbox.open(small(tag, {env = {A = "1"}})))
  t.eq(env.pooled, false, "another environment")
  t.eq(warm:stats().taken, 0)
  local same <close> = assert(sandbox.open(small(tag, {timeout = 30, max_output = 1000,
    manifest = {["x.txt"] = "x"}})))
  t.eq(same.pooled, true, "timeout, max_output and the manifest are the open's own")
end)

t.test("open{pool = N}: the first opens start cold and make one pool, the next ones take from it", function()
  local tag = new_tag()
  local firsts = luagent.map({1, 2}, function() return assert(sandbox.open(small(tag, {pool = 2}))) end)
  t.eq(firsts[1].pooled, false); t.eq(firsts[2].pooled, false)
  local made = {}
  for _, p in ipairs(pools.list()) do
    if p.template.labels["luagent.test"] == tag then made[#made + 1] = p end
  end
  t.eq(#made, 1, "two opens at once made one pool")
  t.eq(made[1].size, 2)
  assert(made[1]:wait())
  local second <close> = assert(sandbox.open(small(tag, {pool = 2})))
  t.eq(second.pooled, true)
  local third <close> = assert(sandbox.open(small(tag))) -- no pool option: a matching pool is used all the same
  t.eq(third.pooled, true)
  assert(pools.drain_all())
  t.eq(count("containers", "luagent.test=" .. tag, "luagent.pool"), 2, "only the two handed out are left")
  for _, box in ipairs(firsts) do assert(box:close()) end
end)

t.test("an open computes the pool key once: the first (which makes the pool) and one that takes from it", function()
  local tag = new_tag()
  local real_key, keys = pools.key, 0
  pools.key = function(...) keys = keys + 1 return real_key(...) end
  local ok, err = pcall(function()
    local first <close> = assert(sandbox.open(small(tag, {pool = 1})))
    t.eq(first.pooled, false)
    t.eq(keys, 1, "the open that made the pool (it was 3: take, has, new)")
    local made
    for _, p in ipairs(pools.list()) do if p.template.labels["luagent.test"] == tag then made = p end end
    assert(made:wait())
    keys = 0
    local second <close> = assert(sandbox.open(small(tag, {pool = 1})))
    t.eq(second.pooled, true)
    t.eq(keys, 1, "an open from the pool")
    assert(made:close())
  end)
  pools.key = real_key
  if not ok then error(err, 0) end
end)

-- ---- draining ----

local POOL_RECIPE = [[
local tag, fail = luagent.settings.tag, luagent.settings.fail
local warm = assert(luagent.sandbox.pool{size = 2, memory = "64m", tmp_size = "16m", workspace_size = "16m",
                                         labels = {["luagent.test"] = tag}})
local box = assert(luagent.sandbox.open{memory = "64m", tmp_size = "16m", workspace_size = "16m",
                                        labels = {["luagent.test"] = tag}})
assert(box.pooled)
print("pool " .. warm.id)
if fail then error("the recipe failed on purpose") end
]]

t.test("a run's pool is drained when the run ends, and when it fails", function()
  local recipe = script("pool_recipe.lua", POOL_RECIPE)
  for _, fail in ipairs({false, true}) do
    local tag = new_tag()
    local r = assert(run.new{recipe = recipe, settings = {tag = tag, fail = fail or nil},
                             dir = work .. "/runs/" .. tag, quiet = true, capture = true})
    local result = r:execute()
    t.eq(result.status, fail and "failed" or "ok", tostring(result.error))
    t.match(fs.read(work .. "/runs/" .. tag .. "/stdout.txt"), "^pool %x+")
    nothing_left(fail and "after an error" or "after the run", "luagent.test=" .. tag)
  end
end)

t.test("pool:close drains, waiting for sessions still starting; the pool is then closed", function()
  local tag = new_tag()
  local warm = assert(sandbox.pool(small(tag, {size = 1})))
  local box <close> = assert(sandbox.open(small(tag)))
  t.ok(box.pooled)
  t.eq(warm:stats().starting, 1, "a refill is starting")
  assert(warm:close())
  t.eq(count("containers", "luagent.pool=" .. warm.id), 1, "only the handed-out session is left")
  t.eq(count("volumes", "luagent.pool=" .. warm.id), NS and 0 or 1)
  assert(warm:close()) -- idempotent
  local ok, err = warm:wait()
  t.eq(ok, nil); t.eq(err.kind, "closed")
  t.match(tostring(warm), "closed")
  local after <close> = assert(sandbox.open(small(tag)))
  t.eq(after.pooled, false, "a closed pool hands nothing out")
end)

local CHILD = [[
local tag, how = ...
local o = {memory = "64m", tmp_size = "16m", workspace_size = "16m", labels = {["luagent.test"] = tag}}
if how == "starting" then
  print("READY " .. luagent.sys.pid() .. " (the pool is starting)")
  io.stdout:flush()
end
if how == "explicit" or how == "starting" then assert(luagent.sandbox.pool{size = 2, memory = o.memory,
  tmp_size = o.tmp_size, workspace_size = o.workspace_size, labels = o.labels}) end
o.pool = (how == "open" or how == "end") and 3 or nil
local box = assert(luagent.sandbox.open(o))
print("READY " .. luagent.sys.pid() .. " " .. tostring(box.pooled))
io.stdout:flush()
if how == "end" then
  local made = require("luagent.sandbox.pool").list()[1]
  assert(made:wait())
  print("FULL " .. made:stats().ready)
  return
end
luagent.sleep(60)
]]

t.test("Ctrl-C: the pools are drained, starting sessions too (no container or volume left)", function()
  local path = script("child.lua", CHILD)
  for _, how in ipairs({"open", "explicit", "starting"}) do
    local tag = new_tag()
    local proc, pid = child(path, "READY (%d+) ", tag, how)
    if how == "explicit" then luagent.sleep(0.3) end -- a refill is under way
    if how == "starting" then -- interrupted while sandbox.pool waits for its sessions
      local deadline = luagent.now() + 30
      while count("containers", "luagent.owner.pid=" .. pid) == 0 and luagent.now() < deadline do luagent.sleep(0.02) end
    end
    t.ok(count("containers", "luagent.test=" .. tag, "luagent.owner.pid=" .. pid) >= 1, "the child has sessions")
    proc:kill("INT")
    local code = proc:wait(30)
    t.eq(code, 130, how .. ": exit status after Ctrl-C; stderr: " .. tostring(proc:read("stderr")))
    nothing_left(how, "luagent.test=" .. tag, "luagent.owner.pid=" .. pid)
    proc:close()
  end
end)

t.test("the process's end drains the pool open{pool = N} made", function()
  local tag = new_tag()
  local proc, pid, full = child(script("child.lua", CHILD), "READY (%d+) .*FULL (%d+)", tag, "end")
  t.eq(full, "3", "the child's pool was full")
  t.eq(proc:wait(60), 0, tostring(proc:read("stderr")))
  nothing_left("at the end", "luagent.test=" .. tag, "luagent.owner.pid=" .. pid)
  proc:close()
end)

t.test("a crashed process's idle pool sessions are removed by the next sweep", function()
  local tag = new_tag()
  local proc, pid = child(script("child.lua", CHILD), "READY (%d+) ", tag, "explicit")
  local deadline = luagent.now() + 60
  while count("containers", "luagent.owner.pid=" .. pid, "luagent.pool") < 3 and luagent.now() < deadline do
    luagent.sleep(0.1)
  end
  proc:kill("KILL")
  proc:wait(10)
  proc:close()
  t.eq(count("containers", "luagent.test=" .. tag, "luagent.owner.pid=" .. pid, "luagent.pool"), 3,
       "the crash left the idle ones and the handed-out one")
  local sweeper = script("sweeper.lua", 'assert(luagent.sandbox.open{memory = "64m"}):close()\n')
  local code, out = sys.execute(luagent_argv("run", "-q", sweeper))
  t.eq(code, 0, out)
  nothing_left("after the sweep", "luagent.test=" .. tag, "luagent.owner.pid=" .. pid)
end)

-- ---- bad input ----

t.test("bad input: one error naming the option, and nothing left running", function()
  local tag = new_tag()
  t.raises(function() sandbox.pool() end, "sandbox.pool: expects a table")
  t.raises(function() sandbox.pool(small(tag)) end, "sandbox.pool: size = nil")
  t.raises(function() sandbox.pool(small(tag, {size = 0})) end, "size = 0")
  t.raises(function() sandbox.pool(small(tag, {size = 1.5})) end, "size = 1.5")
  t.raises(function() sandbox.pool(small(tag, {size = "2"})) end, "size = 2")
  t.raises(function() sandbox.pool(small(tag, {size = 1, memroy = "1g"})) end, "unknown option 'memroy'")
  t.raises(function() sandbox.pool(small(tag, {size = 1, pool = 2})) end, "unknown option 'pool'")
  t.raises(function() sandbox.pool(small(tag, {size = 1, memory = "lots"})) end, "sandbox%.pool: memory = \"lots\"")
  t.raises(function() sandbox.pool(small(tag, {size = 1, user = "0:0"})) end, "sandbox%.pool: user")
  t.raises(function() sandbox.open(small(tag, {pool = -1})) end, "sandbox.open: pool = %-1")
  t.raises(function() sandbox.open(small(tag, {pool = "many"})) end, "pool = many")

  local warm, err = sandbox.pool(small(tag, {size = 1000, memory = "8g"}))
  t.eq(warm, nil); t.eq(err.kind, "config")
  t.match(err.message, "^sandbox%.pool: size = 1000: 1000 sessions of ")
  t.match(err.message, NS and "more than the Kubernetes cluster" or "more than the Docker engine")
  local box
  box, err = sandbox.open(small(tag, {pool = 1000, memory = "8g"}))
  t.eq(box, nil); t.eq(err.kind, "config")
  t.match(err.message, "^sandbox%.open: pool = 1000")

  warm, err = sandbox.pool(small(tag, {size = 2, image = "luagent-no-such-image:never"}))
  t.eq(warm, nil); t.eq(err.kind, "not_found")
  t.match(err.message, "luagent%-no%-such%-image:never")
  nothing_left("after bad input", "luagent.test=" .. tag)
end)

-- ---- an eval with the pool on ----

t.test("an eval with sandbox.pool set runs as before, its runs take pooled sessions, nothing is left", function()
  local tag = new_tag()
  assert(fs.mkdir(work .. "/eval/data"))
  for i = 1, 4 do assert(fs.write(("%s/eval/data/in%d.txt"):format(work, i), ("w "):rep(i))) end
  assert(fs.write(work .. "/eval/counter.yaml", "tag: none\ninput:\nsandbox: {pool: 0}\n"))
  assert(fs.write(work .. "/eval/counter.lua", [[
local cfg = luagent.config("counter.yaml")
local box <close> = assert(luagent.sandbox.open{memory = "64m", tmp_size = "16m", workspace_size = "16m",
  labels = {["luagent.test"] = cfg.tag}, pool = cfg.sandbox.pool,
  manifest = {["input/data.txt"] = luagent.sandbox.file(cfg.input)}})
local r = assert(box:exec("wc -w < input/data.txt"))
print(box.pooled and "pooled" or "cold", r.stdout)
return r.exit_code
]]))
  assert(fs.write(work .. "/eval/counter.eval.yaml", "recipe: counter.lua\ninputs:\n  - {glob: data/*.txt, "
    .. "setting: input}\nconcurrency: 1\ncache: false\n"))
  local env = process.environ()
  env.LUAGENT_EVALS_DIR = work .. "/evals"
  local proc = assert(process.spawn{argv = {LUAGENT, "eval", work .. "/eval/counter.eval.yaml", "-q",
    "--set", "sandbox.pool=2", "--set", "tag=" .. tag}, env = env, stdout = "pipe", stderr = "pipe"})
  local out = {}
  repeat local chunk = proc:read("stdout"); out[#out + 1] = chunk until not chunk
  local code = proc:wait(300)
  local pid = proc:pid()
  t.eq(code, 0, table.concat(out) .. tostring(proc:read("stderr")))
  proc:close()
  local modes, words = {}, {}
  for _, e in ipairs(assert(fs.walk(work .. "/evals"))) do
    if e.path:match("stdout%.txt$") then
      local text = fs.read(work .. "/evals/" .. e.path)
      local mode, n = text:match("^(%a+)\t(%d+)")
      modes[#modes + 1], words[tonumber(n)] = mode, true
    end
  end
  t.eq(#modes, 4, "four runs")
  for i = 1, 4 do t.ok(words[i], "the run of in" .. i .. " counted its own input") end
  local pooled = 0
  for _, m in ipairs(modes) do if m == "pooled" then pooled = pooled + 1 end end
  t.ok(pooled >= 1 and pooled <= 3, ("the first run opens cold, later ones take pooled sessions (%d of 4 did)")
    :format(pooled))
  nothing_left("after the eval", "luagent.test=" .. tag, "luagent.owner.pid=" .. pid)
end)

return t.done()
