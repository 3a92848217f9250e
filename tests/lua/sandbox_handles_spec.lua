-- needs: docker
-- Handle discipline for every C handle class: use after close is a Lua
-- error (or nil, err), never a crash; close is idempotent; tostring works;
-- a task waiting on a handle that another task closes wakes with an error.
-- The exec stream and supervisor channel need the Docker engine (a container
-- this spec creates and removes itself); the rest use the local test server.
local t = require "helper"
local engine, engine_stream, http, fs, sys = luagent.engine_client, luagent.engine_stream, luagent.http,
  luagent.fs, luagent.sys
local base = "http://127.0.0.1:" .. t.env("TEST_HTTP_PORT")
local RUN_BODY = '{"Detach":false,"Tty":false}'

local work = assert(fs.temp_dir("luagent-handles-spec"))
luagent.at_exit(function() fs.remove(work) end)

-- ---- helpers ----

-- Runs fn in a task and, once it waits, returns the task and the values on
-- the stack of the C function it waits in (its internal handles).
local function waiting_in(fn)
  local co
  local task = luagent.spawn(function()
    co = coroutine.running()
    return fn()
  end)
  local deadline = luagent.now() + 5
  repeat luagent.sleep(0.05) until task:status() ~= "ready" or luagent.now() > deadline
  luagent.sleep(0.1) -- the transfer is under way
  if task:status() ~= "waiting" then
    error(("the task did not wait (%s): %s"):format(task:status(), tostring(select(2, task:wait()))), 2)
  end
  local values = {}
  for i = 1, 20 do
    local name, v = debug.getlocal(co, 0, i)
    if not name then break end
    values[#values + 1] = v
  end
  return task, values
end

local function find_handle(values, prefix)
  for _, v in ipairs(values) do
    if type(v) == "userdata" and tostring(v):sub(1, #prefix) == prefix then return v end
  end
  error("no handle named " .. prefix .. " on the waiting stack", 2)
end

-- The task's results once it ended, failing (not hanging) if it does not
-- end within `seconds`.
local function ended_within(task, seconds)
  local deadline = luagent.now() + seconds
  while task:status() ~= "done" and task:status() ~= "failed" do
    if luagent.now() > deadline then
      task:cancel()
      error(("the task still %s after %.1f s"):format(task:status(), seconds), 2)
    end
    luagent.sleep(0.05)
  end
  return task:wait()
end

local function raises_closed(fn, what)
  t.raises(fn, what .. " is closed")
end

-- ---- a container of our own ----

local client = assert(engine.connect())
local name = "luagent-handles-spec-" .. sys.random_hex(6)
local created = assert(client:call("POST", "/containers/create", {
  Image = "luagent-sandbox:latest", Cmd = {"sleep", "300"}, User = "1000:1000",
  -- removed by the engine when its sleep ends, should this spec die before at_exit
  HostConfig = {NetworkMode = "none", Init = true, AutoRemove = true},
}, {query = {name = name}}))
local container = created.Id
luagent.at_exit(function() client:call("DELETE", "/containers/" .. container, nil, {query = {force = true}}) end)
assert(client:call("POST", "/containers/" .. container .. "/start"))
-- the sandbox supervisor, for the channel's tests
assert(engine_stream.put_archive(client:options("/containers/" .. container .. "/archive?path=/tmp",
  {entries = {require("luagent.sandbox.supervisor").entry()}, uid = 0, gid = 0})))

local function exec_stream(cmd)
  local exec = assert(client:call("POST", "/containers/" .. container .. "/exec", {
    AttachStdout = true, AttachStderr = true, Tty = false, Cmd = {"/bin/sh", "-c", cmd},
  }))
  return engine_stream.exec_start(client:options("/exec/" .. exec.Id .. "/start", {body = RUN_BODY}))
end

local function supervisor_channel()
  local exec = assert(client:call("POST", "/containers/" .. container .. "/exec", {
    AttachStdin = true, AttachStdout = true, AttachStderr = true, Tty = false, User = "0",
    Cmd = {"/tmp/luagent-supervisor", "serve", "1000:1000"},
  }))
  return assert(engine_stream.supervisor{unix_socket = client.endpoint.unix_socket,
    path = "/v" .. client.version .. "/exec/" .. exec.Id .. "/start", body = RUN_BODY})
end

local function run(cmd)
  return {argv = {"/bin/sh", "-c", cmd}, cwd = "/tmp"}
end

-- ---- exec stream ----

t.test("exec stream: wait after <close> raises instead of crashing (was signal 11)", function()
  local stream = exec_stream("echo hi")
  do
    local closing <close> = stream -- luacheck: ignore 211
  end
  raises_closed(function() stream:wait(5) end, "exec stream")
  raises_closed(function() stream:result() end, "exec stream")
  raises_closed(function() stream:abort() end, "exec stream")
  stream:close()
  stream:close()
  t.eq(tostring(stream), "exec stream (closed)")
end)

t.test("exec stream: open use, tostring, then close", function()
  local stream = exec_stream("echo out; echo err >&2")
  t.eq(tostring(stream), "exec stream (running)")
  t.eq(stream:wait(20), true)
  t.eq(tostring(stream), "exec stream (ended)")
  local r = assert(stream:result())
  t.eq(r.stdout, "out\n")
  t.eq(r.stderr, "err\n")
  stream:close()
  raises_closed(function() stream:result() end, "exec stream")
end)

t.test("exec stream: a task waiting on it wakes with an error when another closes it", function()
  local stream = exec_stream("sleep 30")
  local waiter = luagent.spawn(function() return stream:wait() end)
  luagent.sleep(0.3)
  t.eq(waiter:status(), "waiting")
  local started = luagent.now()
  stream:close()
  local ok, err = ended_within(waiter, 5)
  t.eq(ok, nil)
  t.match(tostring(err), "exec stream is closed")
  t.lt(luagent.now() - started, 2, "woken at once")
end)

t.test("exec stream: a second waiter raises; abort wakes the first", function()
  local stream = exec_stream("echo partial; sleep 30")
  local waiter = luagent.spawn(function() return stream:wait() end)
  luagent.sleep(0.5)
  t.raises(function() stream:wait(1) end, "another task is already waiting")
  stream:abort()
  t.eq(ended_within(waiter, 5), true, "wait returns true after abort")
  t.eq(tostring(stream), "exec stream (aborted)")
  t.eq(stream:wait(), true)
  local r = assert(stream:result())
  t.eq(r.stdout, "partial\n")
  stream:close()
end)

-- ---- supervisor channel ----

t.test("supervisor channel: results stay readable after close; send, wait and take raise", function()
  local ch = supervisor_channel()
  t.eq(tostring(ch), "supervisor channel (open)")
  assert(ch:send("run", 1, run("echo one")))
  t.eq(ch:wait(1, 20), true)
  assert(ch:send("run", 2, run("echo two; sleep 30")))
  t.eq(ch:wait(2, 20, true), false, "output wakes a waiter that asked for it")
  t.same({ch:take(2)}, {"two\n", ""})
  ch:close()
  ch:close()
  t.eq(tostring(ch), "supervisor channel (closed)")
  local alive, why = ch:alive()
  t.eq(alive, false)
  t.eq(why, "closed by the host")
  local one = ch:result(1)
  t.eq(one.stdout, "one\n")
  t.eq(one.exit_code, 0)
  local two = ch:result(2)
  t.eq(two.done, false, "the unfinished command is reported as such")
  t.eq(two.stdout_bytes, 4, "what take() handed out is counted")
  t.raises(function() ch:result(2) end, "no command with this id")
  raises_closed(function() ch:send("run", 3, run("true")) end, "supervisor channel")
  raises_closed(function() ch:wait(1) end, "supervisor channel")
  raises_closed(function() ch:take(1) end, "supervisor channel")
end)

t.test("supervisor channel: bad requests raise naming the field", function()
  local ch <close> = supervisor_channel()
  t.raises(function() ch:send("run", 1, {argv = {}}) end, "argv")
  t.raises(function() ch:send("run", 1, {argv = {"true"}, timeout = -1}) end, "timeout")
  t.raises(function() ch:send("signal", 1, {signal = 99}) end, "signal")
  t.raises(function() ch:send("launch", 1, {}) end, "unknown op")
  t.raises(function() ch:send("pack", 1, {path = "/tmp"}, {extract = {}}) end, "dest")
  assert(ch:send("run", 1, run("echo fine")))
  t.eq(ch:wait(1, 20), true)
  t.eq(ch:result(1).stdout, "fine\n", "a refused request left the channel usable")
end)

t.test("supervisor channel: a pack saved into a file, closed mid-stream, leaves nothing behind", function()
  local ch = supervisor_channel()
  assert(ch:send("run", 1, run("head -c 50000000 /dev/urandom > /tmp/big.bin")))
  t.eq(ch:wait(1, 60), true)
  ch:result(1)
  assert(ch:send("pack", 2, {path = "/tmp/big.bin"}, {save = {path = work .. "/snap.tar"}}))
  luagent.sleep(0.02) -- under way: 50 MB take longer
  ch:close()
  t.eq(ch:result(2).sink_error ~= nil, true, "the half stream is not a result")
  t.same(fs.list(work), {}, "no temporary file is left")
end)

t.test("supervisor channel: a task waiting on it gets nil, err (closed) when another closes it", function()
  local ch = supervisor_channel()
  assert(ch:send("run", 7, run("echo started; sleep 30")))
  local waiter = luagent.spawn(function() return ch:wait(7) end)
  luagent.sleep(0.5)
  t.eq(waiter:status(), "waiting")
  t.raises(function() ch:wait(7, 1) end, "another task is already waiting")
  ch:close()
  local ok, err = ended_within(waiter, 5)
  t.eq(ok, nil)
  t.eq(err.kind, "closed")
  t.match(tostring(err), "^closed: the supervisor channel was closed")
  t.eq(ch:result(7).stdout, "started\n")
end)

t.test("supervisor channel: collected while a command runs, nothing breaks", function()
  local ch = supervisor_channel()
  assert(ch:send("run", 1, run("sleep 30")))
  ch = nil -- luacheck: ignore 311
  collectgarbage()
  collectgarbage()
  t.ok(true)
end)

-- ---- archive jobs, the tar writer and extractor, the http request ----

t.test("archive job: closed while its task waits, the task raises and no temp file stays", function()
  local task, values = waiting_in(function()
    return engine_stream.save_archive{url = base .. "/hang", path = work .. "/snap.tar", timeout = 10}
  end)
  local job = find_handle(values, "save_archive job")
  t.eq(tostring(job), "save_archive job (open)")
  job:close()
  job:close()
  t.eq(tostring(job), "save_archive job (closed)")
  local ok, err = ended_within(task, 3)
  t.eq(ok, nil)
  t.match(tostring(err), "save_archive job is closed")
  t.same(fs.list(work), {}, "no half snapshot")
end)

t.test("archive jobs of every call close cleanly (read_file, get_archive, put_archive)", function()
  for _, call in ipairs{
    {"read_file job", function() return engine_stream.read_file{url = base .. "/hang", timeout = 10} end},
    {"get_archive job", function()
      return engine_stream.get_archive{url = base .. "/hang", dest = work .. "/x", timeout = 10}
    end},
    {"put_archive job", function()
      return engine_stream.put_archive{url = base .. "/hang", timeout = 10, entries = {{name = "a.txt", data = "x"}}}
    end},
  } do
    local task, values = waiting_in(call[2])
    find_handle(values, call[1]):close()
    local ok, err = ended_within(task, 3)
    t.eq(ok, nil)
    t.match(tostring(err), call[1] .. " is closed")
  end
  fs.remove(work .. "/x")
end)

t.test("tar writer and extractor closed under a transfer: an error, not a crash", function()
  local task, values = waiting_in(function()
    return engine_stream.put_archive{url = base .. "/hang", timeout = 1, entries = {{name = "a.txt", data = "x"}}}
  end)
  local writer = find_handle(values, "tar writer")
  writer:close()
  writer:close()
  t.eq(tostring(writer), "tar writer (closed)")
  local ok, err = ended_within(task, 5)
  t.eq(ok, nil)
  t.match(tostring(err), "tar writer is closed")

  task, values = waiting_in(function()
    return engine_stream.get_archive{url = base .. "/drip?n=20&interval=0.1", dest = work .. "/y", timeout = 10}
  end)
  local extract = find_handle(values, "tar extractor")
  extract:close()
  t.eq(tostring(extract), "tar extractor (closed)")
  ok, err = ended_within(task, 5)
  t.eq(ok, nil)
  t.match(tostring(err), "tar extractor is closed")
  fs.remove(work .. "/y")
end)

t.test("http request: closed while its task waits, the task raises", function()
  local task, values = waiting_in(function() return http.request{url = base .. "/hang", timeout = 10} end)
  local request = find_handle(values, "http request")
  t.eq(tostring(request), "http request (open)")
  request:close()
  request:close()
  t.eq(tostring(request), "http request (closed)")
  local ok, err = ended_within(task, 3)
  t.eq(ok, nil)
  t.match(tostring(err), "http request is closed")
  -- the streaming kind too, closed from inside its own on_chunk
  local res
  task, values = waiting_in(function()
    res = http.request{url = base .. "/drip?n=20&interval=0.1", timeout = 10, on_chunk = function() end}
  end)
  find_handle(values, "http request"):close()
  ok, err = ended_within(task, 3)
  t.eq(ok, nil)
  t.match(tostring(err), "http request is closed")
  t.eq(res, nil)
end)

t.test("sse parser: use after close raises, the on_chunk of http.sse too", function()
  local parser = http.sse_parser()
  t.eq(tostring(parser), "sse parser (open)")
  t.eq(parser:feed("data: x\n\n")[1].data, "x")
  parser:close()
  parser:close()
  t.eq(tostring(parser), "sse parser (closed)")
  raises_closed(function() parser:feed("data: y\n\n") end, "sse parser")
  raises_closed(function() parser:pending() end, "sse parser")
  local on_chunk, p2 = http.sse(function() end)
  do
    local closing <close> = p2 -- luacheck: ignore 211
  end
  raises_closed(function() on_chunk("data: 1\n\n") end, "sse parser")
end)

t.test("every handle class is registered with close = __close = __gc and a __tostring", function()
  local registry = debug.getregistry()
  for _, class in ipairs{"luagent.engine_stream.exec_stream", "luagent.engine_stream.supervisor",
                         "luagent.engine_stream.archive_job",
                         "luagent.tar.writer", "luagent.tar.extract", "luagent.http.request",
                         "luagent.http.sse_parser"} do
    local mt = registry[class]
    t.ok(mt, class .. " is registered")
    t.ok(mt.__index.close and mt.__index.close == mt.__close and mt.__close == mt.__gc, class .. ": one close")
    t.ok(mt.__tostring, class .. ": __tostring")
    t.raises(function() mt.__index.close(io.stdout) end, class)
  end
end)

t.test("engine_stream.engine_error reads an engine error body the one way", function()
  local err = engine_stream.engine_error(404, '{"message":"No such container: x\\u00e9"}', "GET /containers/x/json")
  t.eq(err.kind, "not_found")
  t.eq(err.status, 404)
  t.eq(err.engine_message, "No such container: x\u{e9}")
  t.eq(tostring(err), "not_found: GET /containers/x/json: Docker engine says: No such container: x\u{e9} (HTTP 404)")
  t.ok(luagent.errors.is(err))
  err = engine_stream.engine_error(409, "conflict text\nsecond line")
  t.eq(err.kind, "conflict")
  t.eq(err.message, "Docker engine says: conflict text (HTTP 409)")
  t.eq(engine_stream.engine_error(500, "").kind, "docker")
  -- the engine client gives the same values
  local _, cerr = client:call("GET", "/containers/luagent-no-such-container-" .. sys.random_hex(4) .. "/json")
  t.eq(cerr.kind, "not_found")
  t.ok(luagent.errors.is(cerr))
  t.match(cerr.message, "^GET /containers/.*: Docker engine says: No such container")
  local _, uerr = engine.connect{host = "unix://" .. work .. "/no.sock"}
  t.eq(uerr.kind, "docker_unreachable")
  t.ok(luagent.errors.is(uerr))
end)

return t.done()
