-- The checks tests/e2e/tls_engine_test.sh runs against a second Docker
-- engine on loopback TCP (DOCKER_HOST & co. set by the script): a session
-- there runs every command through its supervisor over one hijacked attach,
-- exactly as on a unix socket. Settings (--set):
--   label        the luagent.test label of every session made here
--   socket_host  the same engine's unix socket, for the per-exec comparison
--   wrong_ca     a CA certificate that did not sign the engine's (TLS only)
--   python       1: the sandbox image is in the engine, check box:python
--   stop_engine  the command that stops the engine (last check, TLS only)
--   plain        1: the engine speaks plain TCP (a shorter set)
package.path = "tests/lua/?.lua;" .. package.path
local t = require "helper"
local sandbox, engine_stream, fs, sys = luagent.sandbox, luagent.engine_stream, luagent.fs, luagent.sys
local s = luagent.settings
local BUSYBOX = "luagent-busybox:test"
local host = os.getenv("DOCKER_HOST")
local labels = {["luagent.test"] = s.label}

local work = assert(fs.temp_dir("luagent-tls-checks"))
luagent.at_exit(function() fs.remove(work) end)

local client = assert(sandbox.engine())

-- a pattern that matches text as it is
local function plain(text)
  return (text:gsub("%p", "%%%0"))
end

local function open(opts)
  opts = opts or {}
  opts.image = opts.image or BUSYBOX
  opts.labels = labels
  local box, err = sandbox.open(opts)
  if not box then error("sandbox.open: " .. tostring(err), 2) end
  return box
end

local function ok_exec(box, cmd, opts)
  local r, err = box:exec(cmd, opts)
  if not r then error("exec failed: " .. tostring(err), 2) end
  return r
end

-- The Docker execs the engine made in the session's container.
local function exec_ids(box)
  return #(assert(client:call("GET", "/containers/" .. box.container .. "/json")).ExecIDs or {})
end

local box = nil

t.test("over " .. (s.plain and "TCP" or "TLS") .. ": the supervisor's volume is filled through the engine, "
  .. "and ten commands cost one Docker exec (its serve)", function()
  local volume = require("luagent.sandbox.supervisor").volume()
  t.ok(not client:call("GET", "/volumes/" .. volume), "the test removed " .. volume .. " from the engine first")
  box = open()
  t.ok(client:call("GET", "/volumes/" .. volume), "the volume is there now")
  for i = 1, 10 do t.eq(ok_exec(box, {"echo", tostring(i)}).stdout, i .. "\n") end
  t.eq(exec_ids(box), 1)
end)

t.test("exec: output, exit code, stderr, and 2 MiB of stdin both ways", function()
  local r = ok_exec(box, {"sh", "-c", "echo out; echo err >&2; exit 3"})
  t.eq(r.stdout, "out\n")
  t.eq(r.stderr, "err\n")
  t.eq(r.exit_code, 3)
  local big = ("0123456789abcdef"):rep(128 * 1024)
  r = ok_exec(box, {"cat"}, {stdin = big, max_output = #big})
  t.eq(#r.stdout, #big)
  t.ok(r.stdout == big, "cat gave back what it was given")
end)

t.test("four commands with 2 MiB of stdin each, sent at once: each comes back whole "
  .. "(a request queued while a TLS write waits)", function()
  local tasks = {}
  for i = 1, 4 do
    local data = (tostring(i)):rep(2 * 1024 * 1024)
    tasks[i] = luagent.spawn(function()
      local r = ok_exec(box, {"cat"}, {stdin = data, max_output = #data})
      return r.stdout == data
    end)
  end
  for i = 1, 4 do t.eq(tasks[i]:wait(), true, "command " .. i) end
end)

t.test("spawn: output read while it runs, then its end", function()
  local p = assert(box:spawn{"sh", "-c", "echo one; sleep 0.3; echo two"})
  local seen = ""
  local deadline = luagent.now() + 10
  while not seen:find("one") and luagent.now() < deadline do seen = seen .. assert(p:read(1)) end
  t.match(seen, "one")
  local r = assert(p:wait(10))
  t.eq(r.exit_code, 0)
  t.match(seen .. r.stdout, "two")
end)

t.test("extract and snapshot through the supervisor's pack: 3 MB come home intact", function()
  ok_exec(box, {"sh", "-c", "mkdir -p output && head -c 3000000 /dev/urandom > output/big && echo hi > output/a.txt"})
  local inside = ok_exec(box, {"sha256sum", "output/big"}).stdout:match("^(%x+)")
  local dest = work .. "/out"
  local report = assert(box:extract("output", dest))
  t.eq(#report.files, 2)
  t.eq(sys.sha256(assert(fs.read(dest .. "/big"))), inside)
  local tarfile = work .. "/snap.tar"
  local bytes = assert(box:snapshot(tarfile))
  t.ok(bytes > 3000000, "the snapshot holds the workspace")
  t.eq(assert(fs.stat(tarfile)).size, bytes)
end)

t.test("a command past its timeout is stopped, and the session goes on", function()
  local started = luagent.now()
  local r = ok_exec(box, {"sleep", "30"}, {timeout = 1})
  t.ok(r.timed_out, "timed_out")
  t.lt(luagent.now() - started, 8, "it came back soon after its timeout")
  t.eq(ok_exec(box, {"echo", "still here"}).stdout, "still here\n")
end)

if s.python then
  t.test("python: the persistent interpreter keeps its state", function()
    local py = open{image = "luagent-sandbox:latest"}
    t.eq(assert(py:python("x = 41")).exit_code, 0)
    t.eq(assert(py:python("print(x + 1)")).stdout, "42\n")
    assert(py:close())
  end)
end

if s.socket_host then
  t.test("per-exec cost over " .. (s.plain and "TCP" or "TLS") .. " beside the same engine's socket", function()
    local local_box = open{docker_host = s.socket_host}
    local times = {socket = {}, remote = {}}
    for i = 1, 43 do -- alternating, three warm-up rounds
      for name, b in pairs{socket = local_box, remote = box} do
        local started = luagent.now()
        ok_exec(b, {"true"})
        if i > 3 then table.insert(times[name], luagent.now() - started) end
      end
    end
    local function median(xs)
      table.sort(xs)
      return (xs[#xs // 2] + xs[#xs // 2 + 1]) / 2
    end
    print(("# per-exec median of 40 (true): %s %.2f ms, %s %.2f ms"):format(s.socket_host,
      median(times.socket) * 1000, host, median(times.remote) * 1000))
    assert(local_box:close())
  end)
end

if s.wrong_ca then
  t.test("the attach's own TLS check: a CA that did not sign the engine is a tls error naming both", function()
    local created = assert(client:call("POST", "/containers/" .. box.container .. "/exec",
      {AttachStdin = true, AttachStdout = true, AttachStderr = true, Cmd = {"true"}}))
    local channel, err = engine_stream.supervisor(client:options("/exec/" .. created.Id .. "/start",
      {ca_file = s.wrong_ca, timeout = 10}))
    t.eq(channel, nil)
    t.eq(err.kind, "tls")
    t.match(err.message, "TLS with the Docker engine at " .. plain(host))
    t.match(err.message, "CA file " .. plain(s.wrong_ca))
  end)
end

if s.stop_engine then
  t.test("the engine stopped in the middle of a command: the call fails at once naming the engine", function()
    local running = luagent.spawn(function() return box:exec({"sleep", "60"}) end)
    luagent.sleep(0.5)
    local code, out = sys.execute({"sh", "-c", s.stop_engine})
    t.eq(code, 0, out)
    local stopped = luagent.now()
    local r, err = running:wait()
    print("# the call in flight said: " .. tostring(err))
    t.eq(r, nil)
    t.lt(luagent.now() - stopped, 10, "no hang")
    t.match(err.message, plain(host))
    t.ok(err.kind == "docker_unreachable" or err.kind == "sandbox_restarted", "kind " .. tostring(err.kind))
    local next_started = luagent.now()
    local r2, err2 = box:exec({"true"})
    t.eq(r2, nil)
    t.ok(err2 ~= nil and luagent.now() - next_started < 10, "the next call fails too, soon")
    local closed_started = luagent.now()
    box:close()
    t.lt(luagent.now() - closed_started, 15, "close gives up soon")
    box = nil
  end)
end

if box then assert(box:close()) end
return t.done()
