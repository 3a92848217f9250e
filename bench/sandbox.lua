-- bench/sandbox: what running a command in a sandbox costs, measured in one
-- run against the real engine, alternating the ways so they share conditions:
--   luagent box:exec       through the session's supervisor (a fork in the container)
--   luagent, busybox       the same in an image without Python (tools/busybox-image.sh)
--   bare Engine API        one Docker exec by hand: create + start + inspect with plain http.request
--   docker exec (CLI)      the docker command line, one process per call
--   docker run --rm        a fresh container per call (the naive way)
--   luagent over TLS       with LUAGENT_BENCH_TLS_HOST=tcp://host:port (and DOCKER_TLS_VERIFY=1,
--                          DOCKER_CERT_PATH): a busybox session on that engine, its supervisor's
--                          channel over TLS (tests/engines.sh starts one; `image NAME IMAGE` copies
--                          luagent-busybox:test in)
-- then one file put and got (1 KB, 10 MB), a box:python cell (the persistent interpreter), the unified
-- exec pair (exec_command of `true` against box:exec, a write_stdin round trip to a REPL), the same two with
-- save = {...} (20 files there, none changed: the outputs mirror lists the
-- save folder only when serve's watch says it changed, so these cost nothing), and a session's open
-- (container + workspace volume + start; the supervisor's serve starts in the
-- background, so the first command is timed too) and close (remove), cold
-- and from a warm pool (sandbox.pool: started sessions, the supervisor up),
-- alternating, without and with a one-file manifest (staged after hand-out).
-- Goals: box:exec of `true` at most 5 ms (median), far below the bare API's
-- Docker exec; an open from the pool at most 20 ms (median). A benchmark, not
-- a test: it prints figures and never fails on time.
local measure = require "measure"
local median, timed = measure.median, measure.timed
local sandbox, http, sys = luagent.sandbox, luagent.http, luagent.sys
local runs = tonumber(luagent.settings.runs) or 30
local BUSYBOX = "luagent-busybox:test"

-- the docker CLI (here and below) on the main engine, whatever TLS settings the TLS row came with
local MAIN_ENV = {"env", "-u", "DOCKER_TLS_VERIFY", "-u", "DOCKER_CERT_PATH"}
local function main_engine(argv)
  return sys.execute(table.move(argv, 1, #argv, #MAIN_ENV + 1, table.move(MAIN_ENV, 1, #MAIN_ENV, 1, {})))
end

local have_busybox = main_engine({"sh", "tools/busybox-image.sh", BUSYBOX}) == 0
local box = assert(sandbox.open{})
local small = have_busybox and assert(sandbox.open{image = BUSYBOX}) or nil
local client = assert(sandbox.engine())
local tls_host = os.getenv("LUAGENT_BENCH_TLS_HOST")
local remote = tls_host and assert(sandbox.open{image = BUSYBOX, docker_host = tls_host}) or nil

local function bare_exec(argv)
  local created = assert(client:call("POST", "/containers/" .. box.container .. "/exec",
    {AttachStdout = true, AttachStderr = true, Cmd = argv, User = "1000:1000"}))
  local res = assert(http.request(client:options("/exec/" .. created.Id .. "/start",
    {method = "POST", body = '{"Detach":false,"Tty":false}', headers = {["content-type"] = "application/json"}})))
  assert(res.status == 200)
  local info = assert(client:call("GET", "/exec/" .. created.Id .. "/json"))
  assert(info.ExitCode == 0)
end

local function cli(argv)
  local code, out = main_engine(argv)
  if code ~= 0 then error(table.concat(argv, " ") .. ": " .. out) end
end

local function exec_ok(session, argv)
  local r = assert(session:exec(argv))
  assert(r.exit_code == 0, r.stderr)
end

local commands = {
  {label = "true", argv = {"true"}},
  {label = "python3 -c pass", argv = {"python3", "-c", "pass"}, python = true},
}
local ways = {
  {label = "luagent box:exec", run = function(argv) exec_ok(box, argv) end},
  {label = "luagent, busybox", run = small and function(argv) exec_ok(small, argv) end, python = false},
  {label = "luagent over TLS", run = remote and function(argv) exec_ok(remote, argv) end, python = false},
  {label = "bare Engine API", run = bare_exec},
  {label = "docker exec (CLI)",
   run = function(argv) cli({"docker", "exec", "-u", "1000", box.container, table.unpack(argv)}) end},
  {label = "docker run --rm", run = function(argv)
    cli({"docker", "run", "--rm", "--network", "none", sandbox.IMAGE, table.unpack(argv)}) end, runs = 5},
}

print(("per-exec latency, median of %d runs (docker run --rm: 5), same session, alternating"):format(runs))
for _, cmd in ipairs(commands) do
  local active = {}
  for _, way in ipairs(ways) do
    if way.run and not (cmd.python and way.python == false) then active[#active + 1] = {way = way, times = {}} end
  end
  for i = 1, runs + 3 do
    for _, a in ipairs(active) do
      if i <= (a.way.runs or runs) + 3 then
        local took = timed(function() a.way.run(cmd.argv) end)
        if i > 3 then table.insert(a.times, took) end -- three warm-up rounds
      end
    end
  end
  local bare
  for _, a in ipairs(active) do
    if a.way.run == bare_exec then bare = median(a.times) end
  end
  print(("  %s"):format(cmd.label))
  for _, a in ipairs(active) do
    local m = median(a.times)
    print(("    %-20s %8.2f ms   %6.3fx the bare API"):format(a.way.label, m * 1000, m / bare))
  end
end

-- Single files through box:put and box:get (the agent's write_file, read_file
-- and view_image tools), beside a command, alternating.
local small_data, big_data = ("x"):rep(1024), ("0123456789abcdef"):rep(10 * 1024 * 1024 // 16)
local file_rows = {
  {label = "box:exec{'true'}", run = function() assert(box:exec({"true"}).exit_code == 0) end},
  {label = "box:put 1 KB", run = function() assert(box:put("bench/small.txt", small_data)) end},
  {label = "box:get 1 KB", run = function() assert(#assert(box:get("bench/small.txt")) == 1024) end},
  {label = "box:put 10 MB", run = function() assert(box:put("bench/big.bin", big_data)) end, runs = 10},
  {label = "box:get 10 MB", run = function() assert(#assert(box:get("bench/big.bin")) == #big_data) end, runs = 10},
}
for _, row in ipairs(file_rows) do row.times = {} end
for i = 1, runs + 3 do
  for _, row in ipairs(file_rows) do
    if i <= (row.runs or runs) + 3 then
      local took = timed(row.run)
      if i > 3 then table.insert(row.times, took) end
    end
  end
end
print(("one file in and out of the workspace, median of %d runs (10 MB: 10), alternating"):format(runs))
for _, row in ipairs(file_rows) do print(("  %-20s %8.2f ms"):format(row.label, median(row.times) * 1000)) end

local cells = {}
assert(box:python("x = 0"))
for i = 1, runs + 3 do
  local took = timed(function() assert(box:python("x += 1").exit_code == 0) end)
  if i > 3 then cells[#cells + 1] = took end
end
print(("box:python cell (x += 1, the persistent interpreter): %.2f ms (median of %d)"):format(median(cells) * 1000, runs))

-- The unified exec pair (tools.standard{shell = "unified"}): exec_command of a
-- command that ends within its yield against box:exec of the same, and one
-- write_stdin round trip to a waiting REPL (a line in, its answer back),
-- alternating; the goal: each within 2x of box:exec of `true`.
do
  local pair = luagent.tools.unified_exec(box)
  local exec_command, write_stdin = pair[1].handler, pair[2].handler
  local out = exec_command{cmd = "python3 -i -q", tty = true, yield_time_ms = 1500}
  local repl = assert(tonumber(out:match("session ID (%d+)")), out)
  local rows = {{label = "box:exec true", times = {}, fn = function() assert(box:exec("true").exit_code == 0) end},
                {label = "exec_command true", times = {}, fn = function()
                  assert(exec_command{cmd = "true"}:find("exited with code 0", 1, true)) end},
                {label = "write_stdin (REPL)", times = {}, fn = function()
                  local n, got = 0, ""
                  repeat -- a round trip: the line in, then short polls until its answer and the next prompt
                    got = got .. write_stdin{session_id = repl, chars = n == 0 and "1 + 1\n" or "", yield_time_ms = 2}
                    n = n + 1
                  until got:find("2\r\n>>> ", 1, true) or n > 500
                  assert(n <= 500, "the REPL did not answer")
                end}}
  for i = 1, runs + 3 do
    for _, way in ipairs(rows) do
      local took = timed(way.fn)
      if i > 3 then way.times[#way.times + 1] = took end
    end
  end
  local base = median(rows[1].times)
  print(("the unified exec pair, medians of %d, alternating:"):format(runs))
  for _, way in ipairs(rows) do
    print(("  %-20s %8.2f ms   %5.2fx box:exec true"):format(way.label, median(way.times) * 1000, median(way.times) / base))
  end
  write_stdin{session_id = repl, chars = "\4", yield_time_ms = 2000}
end

-- The outputs mirror's cost when nothing changed: the same commands on a box
-- without save and one with it (20 files in its save folder), alternating.
local dest = assert(luagent.fs.temp_dir("luagent-bench-mirror"))
local saving = assert(sandbox.open{save = {from = "output", to = dest .. "/output"}})
local fill = "mkdir -p output && for i in $(seq 1 20); do echo $i > output/f$i.txt; done"
assert(box:exec(fill)); assert(saving:exec(fill)); assert(saving:python("x = 0"))
local mirror_rows = {
  {label = "box:exec{'true'}", run = function(b) assert(b:exec({"true"}).exit_code == 0) end},
  {label = "box:python('x += 1')", run = function(b) assert(b:python("x += 1").exit_code == 0) end},
}
print(("the outputs mirror (save = {...}, 20 files, none changed): per command, median of %d, alternating"):format(runs))
for _, row in ipairs(mirror_rows) do
  local plain, with = {}, {}
  for i = 1, runs + 3 do
    local a, b = timed(function() row.run(box) end), timed(function() row.run(saving) end)
    if i > 3 then plain[#plain + 1], with[#with + 1] = a, b end
  end
  local p, w = median(plain), median(with)
  print(("  %-22s %6.2f ms without save, %6.2f ms with: +%.2f ms (%.0f%%)"):format(row.label, p * 1000, w * 1000,
    (w - p) * 1000, (w - p) / p * 100))
end
saving:close()
luagent.fs.remove(dest)
box:close()
if small then small:close() end
if remote then remote:close() end

-- Cold and pooled opens alternate; the pool is full before each one (its
-- refill never runs during a measurement). Their labels differ, so a cold
-- open's spec does not match the pool's.
local POOLED, COLD = {["luagent.bench"] = "pool"}, {["luagent.bench"] = "cold"}
local warm = assert(sandbox.pool{size = 2, labels = POOLED})
local opens = {
  {label = "cold", pooled = false}, {label = "pool", pooled = true},
  {label = "cold, 1-file manifest", pooled = false, manifest = true},
  {label = "pool, 1-file manifest", pooled = true, manifest = true},
}
for _, way in ipairs(opens) do way.opens, way.firsts, way.closes = {}, {}, {} end
local n = math.min(runs, 10)
for _ = 1, n do
  for _, way in ipairs(opens) do
    assert(warm:wait())
    local s
    local man = way.manifest and {["input/data.csv"] = "a,b\n1,2\n"} or nil
    local labels = way.pooled and POOLED or COLD
    table.insert(way.opens, timed(function() s = assert(sandbox.open{manifest = man, labels = labels}) end))
    assert(s.pooled == way.pooled, "the pool did not hand out as expected")
    table.insert(way.firsts, way.opens[#way.opens] + timed(function() assert(s:exec({"true"})) end))
    table.insert(way.closes, timed(function() assert(s:close()) end))
  end
end
warm:close()
local cold, pool = opens[1], opens[2]
print(("session open (container + workspace volume + start; serve starts meanwhile): %.1f ms, open + the first"
  .. " command: %.1f ms, close (remove): %.1f ms (medians of %d)")
  :format(median(cold.opens) * 1000, median(cold.firsts) * 1000, median(cold.closes) * 1000, n))
print(("session open, cold vs from a warm pool (sandbox.pool{size = 2}), alternating, medians of %d:"):format(n))
for _, way in ipairs(opens) do
  print(("  %-24s open %8.2f ms   open + the first command %8.2f ms"):format(way.label, median(way.opens) * 1000,
    median(way.firsts) * 1000))
end
print(("  the pool's open is %.0fx faster than a cold one (%.0fx with the manifest)")
  :format(median(cold.opens) / median(pool.opens), median(opens[3].opens) / median(opens[4].opens)))

-- A file as a session's first operation (an agent's first tool calls are
-- often list_files and read_file, before any command): serve starts with the
-- open, and the first put waits for it rather than taking the engine's
-- archive endpoint; against a put after the first command, same sessions.
local FILE = ("x"):rep(1024)
local via = {}
local subscription = luagent.events.subscribe(function(ev)
  if ev.type == "sandbox_file" then via[ev.via] = (via[ev.via] or 0) + 1 end
end)
local firsts, afters = {}, {}
for _ = 1, n do
  local s = assert(sandbox.open{labels = COLD})
  table.insert(firsts, timed(function() assert(s:put("first.txt", FILE)) end))
  assert(s:exec({"true"}))
  table.insert(afters, timed(function() assert(s:put("after.txt", FILE)) end))
  assert(s:close())
end
luagent.events.unsubscribe(subscription)
print(("a 1 KB put as the session's first operation %.1f ms, after a command %.2f ms: %.0fx (medians of %d; "
  .. "through the supervisor %d times, the archive endpoint %d)"):format(median(firsts) * 1000, median(afters) * 1000,
  median(firsts) / median(afters), n, via.supervisor or 0, via.archive or 0))

-- runc against runsc (gVisor) on one engine, alternating: a command, a
-- python cell, an open (+ close). The engine is LUAGENT_BENCH_GVISOR_HOST,
-- else the gvisor test engine (tests/engines.sh start gvisor --runtime runsc,
-- the sandbox image copied in); skipped with a line when there is none.
local function gvisor_host()
  local host = os.getenv("LUAGENT_BENCH_GVISOR_HOST")
  if host and host ~= "" then return host end
  if sys.execute({"sh", "-c", "command -v runsc"}) ~= 0 then return nil, "runsc is not installed (apt-get install runsc)" end
  local code, out = main_engine({"sh", "tests/engines.sh", "start", "gvisor", "--runtime", "runsc"})
  if code ~= 0 then return nil, "tests/engines.sh start gvisor --runtime runsc: " .. out end
  host = out:match("(%S+)%s*$")
  code, out = main_engine({"sh", "tests/engines.sh", "image", "gvisor", sandbox.IMAGE})
  if code ~= 0 then return nil, "tests/engines.sh image gvisor: " .. out end
  return host
end

local ghost, why = gvisor_host()
if not ghost then
  print("runc against runsc (gVisor): skipped: " .. why)
else
  local sides = {{label = "runc", opts = {docker_host = ghost, runtime = "runc"}},
                 {label = "runsc", opts = {docker_host = ghost, runtime = "runsc"}}}
  local m = math.min(runs, 20)
  for _, side in ipairs(sides) do
    side.box = assert(sandbox.open(side.opts))
    assert(side.box:python("x = 0"))
    side.exec, side.cell, side.open = {}, {}, {}
  end
  for i = 1, m + 3 do
    for _, side in ipairs(sides) do
      local e = timed(function() assert(side.box:exec({"true"}).exit_code == 0) end)
      local c = timed(function() assert(side.box:python("x += 1").exit_code == 0) end)
      if i > 3 then side.exec[#side.exec + 1], side.cell[#side.cell + 1] = e, c end
    end
  end
  for _ = 1, math.min(runs, 5) do
    for _, side in ipairs(sides) do
      local s
      table.insert(side.open, timed(function() s = assert(sandbox.open(side.opts)); assert(s:exec({"true"})) end))
      assert(s:close())
    end
  end
  print(("runc against runsc (gVisor, ptrace platform) on %s, alternating, medians of %d (open: %d):")
    :format(ghost, m, math.min(runs, 5)))
  for _, side in ipairs(sides) do
    side.box:close()
    print(("  %-6s box:exec{'true'} %8.2f ms   box:python('x += 1') %8.2f ms   open + the first command %8.1f ms")
      :format(side.label, median(side.exec) * 1000, median(side.cell) * 1000, median(side.open) * 1000))
  end
end
