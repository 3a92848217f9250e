-- luagent.process: child processes with pipes, groups, waits and kills.
local t = require "helper"
local process = require "luagent.process"
local fs = require "luagent.fs"

-- Everything a stream says until end-of-file.
local function read_all(p, stream)
  local parts = {}
  while true do
    local data, err = p:read(stream)
    if data == nil then
      t.eq(err, nil, "read ends with nil alone")
      return table.concat(parts)
    end
    parts[#parts + 1] = data
  end
end

local function spawn(opts)
  local p, err = process.spawn(opts)
  t.ok(p, "spawn " .. opts.argv[1] .. ": " .. tostring(err))
  return p
end

-- Is process pid gone (or only a zombie nobody of ours will reap)?
local function gone(pid)
  local stat = fs.read("/proc/" .. pid .. "/stat")
  return stat == nil or stat:match("^%d+ %b() (%a)") == "Z"
end

local function wait_until(fn, seconds)
  local deadline = luagent.now() + seconds
  while not fn() do
    if luagent.now() > deadline then return false end
    luagent.sleep(0.02)
  end
  return true
end

-- The same checks with the pidfd and with the SIGCHLD self-pipe.
for _, variant in ipairs({{name = "pidfd", no_pidfd = nil}, {name = "SIGCHLD", no_pidfd = true}}) do
  local function spawn_v(opts)
    opts._no_pidfd = variant.no_pidfd
    return spawn(opts)
  end

  t.test(variant.name .. ": echo prints to a pipe and exits 0", function()
    local p <close> = spawn_v{argv = {"echo", "hello", "world"}, stdout = "pipe"}
    t.eq(read_all(p, "stdout"), "hello world\n")
    local code, signal = p:wait()
    t.eq(code, 0); t.eq(signal, nil)
    t.eq(p:read("stdout"), nil, "after end-of-file, read keeps answering nil")
  end)

  t.test(variant.name .. ": exit codes, and the signal that ended a process", function()
    local seven <close> = spawn_v{argv = {"sh", "-c", "exit 7"}}
    t.eq(seven:wait(), 7)
    local killed <close> = spawn_v{argv = {"sh", "-c", "kill -TERM $$; sleep 5"}}
    local code, signal = killed:wait()
    t.eq(code, 128 + 15); t.eq(signal, 15)
    t.match(tostring(killed), "killed by TERM")
  end)

  t.test(variant.name .. ": wait with a timeout gives nil, err (timeout); the process runs on", function()
    local p <close> = spawn_v{argv = {"sleep", "5"}}
    local started = luagent.now()
    local code, err = p:wait(0.2)
    local took = luagent.now() - started
    t.eq(code, nil); t.eq(err.kind, "timeout")
    t.match(err.message, "'sleep' %(pid %d+%) still runs after 0.2 s")
    t.ok(took >= 0.19 and took < 1.5, "waited about 0.2 s, not " .. took)
    t.match(tostring(p), "running")
    t.eq(p:kill(), true)
    local c, signal = p:wait(5)
    t.eq(c, 143); t.eq(signal, 15)
  end)

  t.test(variant.name .. ": 20 processes from 20 tasks run at once", function()
    -- each process says when it began and ended: once the last one began, most of the
    -- others were still running (they ran at once), however loaded the machine is
    local tasks = {}
    for i = 1, 20 do
      tasks[i] = luagent.spawn(function()
        local p <close> = spawn_v{argv = {"sh", "-c", "date +%s.%N; sleep 0.4; echo " .. i .. "; date +%s.%N"},
                                  stdout = "pipe"}
        local out = read_all(p, "stdout")
        return out, (p:wait())
      end)
    end
    local spans, last_began = {}, 0
    for i, task in ipairs(tasks) do
      local out, code = task:wait()
      local began, n, ended = out:match("^(%S+)\n(%d+)\n(%S+)\n$")
      t.eq(tonumber(n), i, out); t.eq(code, 0)
      spans[i] = {tonumber(began), tonumber(ended)}
      last_began = math.max(last_began, spans[i][1])
    end
    local running = 0
    for _, span in ipairs(spans) do if span[2] > last_began then running = running + 1 end end
    t.ok(running >= 10, ("twenty 0.4 s processes overlap: %d were running when the last began"):format(running))
  end)
end

t.test("a 10 MB round trip through cat, written and read by two tasks, never held whole", function()
  local CHUNK, CHUNKS = 65536, 160
  local base = ""
  for i = 0, 250 do base = base .. string.char((i * 7 + 3) % 256) end -- 251 bytes: chunks do not align with it
  local big = base:rep(CHUNK // #base + 2)
  local function expected(offset, n) return big:sub(offset % #base + 1, offset % #base + n) end
  local p <close> = spawn{argv = {"cat"}, stdin = "pipe", stdout = "pipe"}
  collectgarbage()
  local before = collectgarbage("count")
  local peak = before
  local writer = luagent.spawn(function()
    for i = 0, CHUNKS - 1 do assert(p:write(expected(i * CHUNK, CHUNK))) end
    p:close_stdin()
  end)
  local received, reads, mismatch = 0, 0, nil
  while true do
    local data = p:read("stdout")
    if not data then break end
    if not mismatch and data ~= expected(received, #data) then mismatch = received end
    received, reads = received + #data, reads + 1
    if reads % 16 == 0 then peak = math.max(peak, collectgarbage("count")) end
  end
  t.eq(select(2, writer:wait()), nil, "the writer finished without error")
  t.eq(received, CHUNK * CHUNKS, "every byte came back")
  t.eq(mismatch, nil, "the bytes came back in order")
  t.ok(reads > 20, "read in many pieces: " .. reads)
  t.lt(peak - before, 4096, "Lua memory grew by less than 4 MB (KB)")
  t.eq(p:wait(), 0)
end)

t.test("stdout and stderr are separate pipes", function()
  local p <close> = spawn{argv = {"sh", "-c", "echo to-out; echo to-err >&2; echo more-out"}, stdout = "pipe",
                          stderr = "pipe"}
  local err_task = luagent.spawn(read_all, p, "stderr")
  t.eq(read_all(p, "stdout"), "to-out\nmore-out\n")
  t.eq(err_task:wait(), "to-err\n")
  t.eq(p:wait(), 0)
end)

t.test("env replaces the environment; cwd sets the folder; stdin null reads as empty", function()
  local p <close> = spawn{argv = {"sh", "-c", "echo \"$FOO|$HOME|$(pwd)\"; cat"}, env = {FOO = "bar baz"},
                          cwd = "/tmp", stdin = "null", stdout = "pipe"}
  t.eq(read_all(p, "stdout"), "bar baz||/tmp\n")
  t.eq(p:wait(), 0)
  local env = process.environ()
  t.eq(env.PATH, os.getenv("PATH"), "environ() is this process's environment")
end)

t.test("a missing program is nil, err (not_found) naming it; a bad cwd names the folder", function()
  local p, err = process.spawn{argv = {"luagent-no-such-program", "x"}}
  t.eq(p, nil); t.eq(err.kind, "not_found"); t.eq(err.program, "luagent-no-such-program")
  t.match(err.message, "program 'luagent%-no%-such%-program' not found in PATH")
  p, err = process.spawn{argv = {"/no/such/dir/prog"}}
  t.eq(p, nil); t.eq(err.kind, "not_found"); t.match(err.message, "/no/such/dir/prog")
  p, err = process.spawn{argv = {"true"}, cwd = "/no/such/folder"}
  t.eq(p, nil); t.eq(err.kind, "not_found"); t.match(err.message, "cannot change to the folder '/no/such/folder'")
  local dir = assert(fs.temp_dir("process-spec"))
  assert(fs.write(dir .. "/not-executable", "echo hi\n"))
  p, err = process.spawn{argv = {dir .. "/not-executable"}}
  fs.remove(dir)
  t.eq(p, nil); t.eq(err.kind, "permission"); t.match(err.message, "not%-executable': permission denied")
end)

t.test("misuse raises, naming the option or the stream", function()
  t.raises(function() process.spawn{} end, "option 'argv' must be a list")
  t.raises(function() process.spawn{argv = {}} end, "'argv' is empty")
  t.raises(function() process.spawn{argv = {"true"}, stdout = "file"} end, "option 'stdout' must be")
  t.raises(function() process.spawn{argv = {"true"}, env = {["A=B"] = "c"}} end, "option 'env'")
  local p <close> = spawn{argv = {"true"}}
  t.raises(function() p:read("stdout") end, "stdout is not a pipe")
  t.raises(function() p:write("x") end, "stdin is not a pipe")
  t.raises(function() p:kill("NOPE") end, "unknown signal")
  p:wait()
end)

t.test("writing to a process that closed its stdin is nil, err (io)", function()
  local p <close> = spawn{argv = {"sh", "-c", "exec 0<&-; sleep 0.1"}, stdin = "pipe"}
  p:wait()
  local ok, err = p:write(("x"):rep(100000))
  t.eq(ok, nil); t.eq(err.kind, "io"); t.match(err.message, "closed its stdin")
end)

t.test("kill reaches a process group that double-forked; without a group the grandchild lives on", function()
  local script = "sh -c 'sleep 60 & echo $!'; sleep 60"
  local p <close> = spawn{argv = {"sh", "-c", script}, stdout = "pipe", new_group = true}
  local grandchild = tonumber(p:read("stdout"):match("%d+"))
  t.ok(not gone(grandchild), "the grandchild runs")
  t.eq(p:kill(), true)
  local _, signal = p:wait(5)
  t.eq(signal, 15)
  t.ok(wait_until(function() return gone(grandchild) end, 3), "the grandchild was killed with its group")

  local solo <close> = spawn{argv = {"sh", "-c", script}, stdout = "pipe"}
  local stray = tonumber(solo:read("stdout"):match("%d+"))
  solo:kill("KILL")
  t.eq(select(2, solo:wait(5)), 9)
  luagent.sleep(0.1)
  t.ok(not gone(stray), "without new_group only the child is signalled")
  local killer <close> = spawn{argv = {"kill", "-KILL", tostring(stray)}}
  killer:wait()
end)

t.test("close kills a running group and reaps it; close is idempotent", function()
  local p = spawn{argv = {"sh", "-c", "sh -c 'sleep 60 & echo $!'; sleep 60"}, stdout = "pipe", new_group = true}
  local pid, grandchild = p:pid(), tonumber(p:read("stdout"):match("%d+"))
  p:close()
  p:close()
  t.ok(wait_until(function() return fs.read("/proc/" .. pid .. "/stat") == nil end, 3),
    "the child is killed and reaped (no zombie left)")
  t.ok(wait_until(function() return gone(grandchild) end, 3), "and its group is gone")
end)

t.test("after close every method raises 'process is closed'", function()
  local p = spawn{argv = {"sleep", "5"}, stdin = "pipe", stdout = "pipe"}
  p:close()
  t.eq(tostring(p), "process (closed)")
  for _, call in ipairs({
    function() p:read("stdout") end, function() p:write("x") end, function() p:wait() end,
    function() p:kill() end, function() p:pid() end, function() p:close_stdin() end,
  }) do
    t.raises(call, "process is closed")
  end
end)

t.test("tasks waiting on a process wake with nil, err (closed) when it is closed under them", function()
  local p = spawn{argv = {"sleep", "5"}, stdin = "pipe", stdout = "pipe"}
  local waiter = luagent.spawn(function() return p:wait() end)
  local reader = luagent.spawn(function() return p:read("stdout") end)
  local writer = luagent.spawn(function() return p:write(("x"):rep(1 << 20)) end)
  luagent.sleep(0.1)
  t.eq(waiter:status(), "waiting"); t.eq(reader:status(), "waiting"); t.eq(writer:status(), "waiting")
  p:close()
  for name, task in pairs({waiter = waiter, reader = reader, writer = writer}) do
    local value, err = task:wait()
    t.eq(value, nil, name)
    t.eq(err and err.kind, "closed", name)
  end
end)

t.test("several tasks may wait for one process; each gets its exit code", function()
  local p <close> = spawn{argv = {"sh", "-c", "sleep 0.2; exit 5"}}
  local waiters = {}
  for i = 1, 3 do waiters[i] = luagent.spawn(function() return p:wait() end) end
  for i = 1, 3 do t.eq(waiters[i]:wait(), 5, "waiter " .. i) end
  t.eq(p:wait(), 5, "and again afterwards")
end)

t.test("a cancelled read stops its task; the process stays usable", function()
  local p <close> = spawn{argv = {"sh", "-c", "sleep 0.3; echo late"}, stdout = "pipe"}
  local reader = luagent.spawn(function() return p:read("stdout") end)
  luagent.sleep(0.05)
  reader:cancel()
  local _, err = reader:wait()
  t.eq(err.kind, "cancelled")
  t.eq(read_all(p, "stdout"), "late\n")
  t.eq(p:wait(), 0)
end)

t.test("a second reader of the same stream raises", function()
  local p <close> = spawn{argv = {"sleep", "1"}, stdout = "pipe"}
  local first = luagent.spawn(function() return p:read("stdout") end)
  luagent.sleep(0.05)
  t.raises(function() p:read("stdout") end, "another task is reading its stdout")
  p:kill()
  t.eq(first:wait(), nil)
end)

t.test("a handle nobody closed is killed when collected", function()
  local pid
  do
    local p = spawn{argv = {"sleep", "60"}}
    pid = p:pid()
  end
  collectgarbage(); collectgarbage()
  t.ok(wait_until(function() return fs.read("/proc/" .. pid .. "/stat") == nil end, 3), "killed and reaped")
end)

t.test("a pipe's end-of-file is seen while an HTTP transfer is in flight", function()
  local port = t.env("TEST_HTTP_PORT")
  local request = luagent.spawn(function()
    return luagent.http.request{url = "http://127.0.0.1:" .. port .. "/delay?s=1.5"}
  end)
  luagent.sleep(0.1)
  local started = luagent.now()
  local p <close> = spawn{argv = {"sh", "-c", "echo hi; sleep 0.3"}, stdout = "pipe"}
  t.eq(read_all(p, "stdout"), "hi\n")
  t.eq(p:wait(), 0)
  t.lt(luagent.now() - started, 1.2, "the end was seen before the transfer finished")
  t.eq(request:wait().status, 200)
end)

return t.done()
